"""Symbiote: one persistent semantic memory for the assistant persona Venom, over MCP."""

__version__ = "0.1.0"
