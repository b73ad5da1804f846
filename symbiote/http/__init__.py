"""The HTTP server: the ASGI app (`/mcp`, legacy SSE, `/health`, the console beside the auth gateway),
the connection limits around uvicorn and the access log.

This is the package's door (tests/test_layers.py checks). It imports nothing itself:
`symbiote serve` installs the access log and the connection cap before it listens and builds `app`,
which brings the engine, the MCP server and the console, only after.
"""

__all__ = ["access_log", "app", "connections"]
