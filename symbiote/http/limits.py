"""Limits on the HTTP surface: the request body cap and CORS.

`BodyLimit` wraps the whole app, so `/mcp`, `/messages/...`, the OAuth endpoints and the consent
form all answer 413 for a body over SYMBIOTE_MAX_BODY_BYTES (default 4 MiB), whether it says so
in Content-Length or streams it in chunks; nothing is buffered past the cap.

CORS (`cors_middleware`) comes only from SYMBIOTE_CORS_ORIGINS: by default no origin is allowed, so
browsers refuse cross-origin calls and only native clients (Claude Desktop, VS Code, curl) reach
the server. Listing an origin lets web pages there call the MCP endpoints with a bearer token;
cookies and other browser credentials are never allowed, and a wildcard is refused in config.
"""

from __future__ import annotations

from collections import deque

import anyio
from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

CORS_METHODS = ("GET", "POST", "OPTIONS")
CORS_HEADERS = ("mcp-session-id", "mcp-protocol-version", "authorization", "content-type", "last-event-id")
CORS_EXPOSED = ("mcp-session-id", "mcp-protocol-version", "www-authenticate")
NO_BODY_METHODS = ("GET", "HEAD", "OPTIONS")
DRAIN_BYTES = 32 * 1024 * 1024
DRAIN_SECONDS = 5.0


def too_large(limit: int) -> JSONResponse:
    return JSONResponse(
        {
            "error": "request_too_large",
            "error_description": f"Request bodies are limited to {limit} bytes (SYMBIOTE_MAX_BODY_BYTES).",
        },
        status_code=413,
    )


class BodyLimit:
    """413 for request bodies over `max_bytes`; the body is read (up to the cap) before the app runs."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in NO_BODY_METHODS:
            await self.app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length")
        if declared is not None and declared.strip().isdigit() and int(declared) > self.max_bytes:
            await self.refuse(scope, receive, send, more_body=True)
            return
        body = bytearray()
        queued: deque[Message] = deque()
        while True:
            message = await receive()
            if message["type"] != "http.request":
                queued.append(message)  # http.disconnect: let the app see it
                break
            body += message.get("body", b"")
            if len(body) > self.max_bytes:
                await self.refuse(scope, receive, send, more_body=message.get("more_body", False))
                return
            if not message.get("more_body", False):
                break
        queued.appendleft({"type": "http.request", "body": bytes(body), "more_body": False})

        async def replay() -> Message:
            return queued.popleft() if queued else await receive()

        await self.app(scope, replay, send)

    async def refuse(self, scope: Scope, receive: Receive, send: Send, *, more_body: bool) -> None:
        """Answer 413, then read and drop what the client is still sending (within bounds).

        Closing a connection with unread bytes makes the kernel reset it, and the client may then
        lose the 413 it was sent; discarding up to DRAIN_BYTES for DRAIN_SECONDS lets it read the
        answer, and costs no memory. A client sending more or longer is simply cut off.
        """
        await too_large(self.max_bytes)(scope, receive, send)
        if not more_body:
            return
        drained = 0
        with anyio.move_on_after(DRAIN_SECONDS):
            while drained <= DRAIN_BYTES:
                message = await receive()
                if message["type"] != "http.request":
                    return
                drained += len(message.get("body", b""))
                if not message.get("more_body", False):
                    return


def cors_middleware(origins: tuple[str, ...]) -> list[Middleware]:
    """Starlette's CORS middleware for exactly these origins, or nothing when none are configured."""
    if not origins:
        return []
    return [
        Middleware(
            CORSMiddleware,
            allow_origins=list(origins),
            allow_methods=list(CORS_METHODS),
            allow_headers=list(CORS_HEADERS),
            expose_headers=list(CORS_EXPOSED),
            allow_credentials=False,
            max_age=600,
        )
    ]
