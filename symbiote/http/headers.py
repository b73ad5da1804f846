"""Header values as RFC 9110 defines them, before anything behind the app reads them.

RFC 9110 §5.5: the whitespace around a field value is not part of it. uvicorn's default parser
(httptools) keeps a value's trailing spaces and tabs, and the MCP SDK's 2026-07-28 transport
compares `Mcp-Name`, `Mcp-Method` and `Mcp-Param-*` with the request body byte for byte, so a
client that pads a value (the conformance suite's `"  store_memory  "`) was refused with -32020.
The draft report to the SDK is in docs/transports.md.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

OWS = b" \t"  # RFC 9110 §5.6.3: optional whitespace is spaces and horizontal tabs


class TrimmedHeaders:
    """Every request header's value without the optional whitespace around it, in place."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            scope["headers"] = [(name, value.strip(OWS)) for name, value in scope["headers"]]
        await self.app(scope, receive, send)
