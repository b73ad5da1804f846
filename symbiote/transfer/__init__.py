"""Moving memories in and out of Symbiote: the JSON Lines export, its import, and the import of the
reference MCP memory server's knowledge graph, so an owner can leave or arrive with all their data.

Everything here works over the memory engine, so the CLI (on a stopped server's data directory)
and the console (on the running server) share one implementation.
"""
