"""The MCP surface: the server with its instructions, prompt and resources, the memory tools, the
history tools, ChatGPT's `search`/`fetch`, and the personality files.

This is the package's door: other packages import from `symbiote.mcp`, never from a module inside it
(tests/test_layers.py checks). Only the runtime builds it, after the start has answered.
"""

from symbiote.mcp.chatgpt_tools import memory_link_endpoint, register_chatgpt_tools
from symbiote.mcp.history_tools import HistoryServices, register_history_tools
from symbiote.mcp.personality import Personality, load_personality
from symbiote.mcp.server import SymbioteMCP, build_server

__all__ = [
    "HistoryServices",
    "Personality",
    "SymbioteMCP",
    "build_server",
    "load_personality",
    "memory_link_endpoint",
    "register_chatgpt_tools",
    "register_history_tools",
]
