"""The MCP surface: the server, its tools and the Venom prompt."""
