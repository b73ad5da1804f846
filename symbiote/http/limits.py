"""Limits on the HTTP surface: the request body cap and CORS.

`BodyLimit` answers 413 for a body over its cap, whether it says so in Content-Length or streams
it in chunks; nothing is buffered past the cap. With authentication on, the whole app is wrapped
in a small cap (UNAUTHENTICATED_MAX_BYTES: the OAuth endpoints, the consent form, anything
unknown), and only the endpoints that check a token before reading the body (`/mcp`, the legacy
SSE messages) are capped at SYMBIOTE_MAX_BODY_BYTES (default 4 MiB), after the check: a stranger
can make the server hold a few KB per request, never megabytes. Without authentication (a
loopback bind) every request gets the full cap.

CORS (`cors_middleware`) comes only from SYMBIOTE_CORS_ORIGINS: by default no origin is allowed, so
browsers refuse cross-origin calls and only native clients (Claude Desktop, VS Code, curl) reach
the server. Listing an origin lets web pages there call the MCP endpoints with a bearer token;
cookies and other browser credentials are never allowed, and a wildcard is refused in config.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

import anyio
from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

CORS_METHODS = ("GET", "POST", "OPTIONS")
# Mcp-Method and Mcp-Name: a 2026-07-28 client sends them on every request (Symbiote's tools declare
# no Mcp-Param-* headers).
CORS_HEADERS = (
    "mcp-session-id",
    "mcp-protocol-version",
    "mcp-method",
    "mcp-name",
    "authorization",
    "content-type",
    "last-event-id",
)
CORS_EXPOSED = ("mcp-session-id", "mcp-protocol-version", "www-authenticate")
NO_BODY_METHODS = ("GET", "HEAD", "OPTIONS")
DRAIN_BYTES = 32 * 1024 * 1024
DRAIN_SECONDS = 5.0
UNAUTHENTICATED_MAX_BYTES = 16 * 1024
FULL_CAP = "SYMBIOTE_MAX_BODY_BYTES"
UNAUTHENTICATED_CAP = (
    "requests without a valid bearer token; the token endpoint, registration and consent need far less"
)


def too_large(limit: int, why: str = FULL_CAP) -> JSONResponse:
    return JSONResponse(
        {
            "error": "request_too_large",
            "error_description": f"Request bodies are limited to {limit} bytes ({why}).",
        },
        status_code=413,
    )


class BodyLimit:
    """413 for request bodies over `max_bytes`; the body is read (up to the cap) before the app runs.

    `later(path)` names the paths this cap leaves alone because their own authentication runs
    first and another BodyLimit (the full cap) sits behind it.
    """

    def __init__(
        self, app: ASGIApp, max_bytes: int, *, why: str = FULL_CAP, later: Callable[[str], bool] = lambda path: False
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.why = why
        self.later = later

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in NO_BODY_METHODS or self.later(scope["path"]):
            await self.app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length")
        if (
            declared is not None
            and declared.strip().isascii()
            and declared.strip().isdigit()
            and int(declared) > self.max_bytes
        ):
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
        await too_large(self.max_bytes, self.why)(scope, receive, send)
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


class CancelOnDisconnect:
    """Stops handling a request once its client has disconnected before its answer was sent.

    The MCP SDK answers a POST when the tool is done and, left alone, goes on working after the
    client gave up: a store of a long text would go on embedding for nobody. Once the body is
    read this listens for the client's disconnect and cancels the handler, and the tool with it.
    Work a handler does after sending its whole answer (the legacy SSE transport forwards a
    message after its 202) is left to finish.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in NO_BODY_METHODS:
            await self.app(scope, receive, send)
            return
        buffered: deque[Message] = deque()
        while True:
            message = await receive()
            buffered.append(message)
            if message["type"] != "http.request" or not message.get("more_body", False):
                break
        gone = anyio.Event()
        answered = False

        async def replay() -> Message:
            if buffered:
                return buffered.popleft()
            await gone.wait()
            return {"type": "http.disconnect"}

        async def sending(message: Message) -> None:
            nonlocal answered
            await send(message)
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                answered = True

        async with anyio.create_task_group() as tasks:

            async def watch() -> None:
                while (await receive())["type"] != "http.disconnect":
                    pass
                if not answered:  # after a complete answer the server reports a disconnect too
                    gone.set()
                    tasks.cancel_scope.cancel()

            tasks.start_soon(watch)
            await self.app(scope, replay, sending)
            tasks.cancel_scope.cancel()


# Paths that check their caller before reading a body (the gateway's token check, the console's
# session) and cap the body themselves after it; the console's sign-in form is not one of them.
CHECKED_FIRST = ("/mcp", "/messages/", "/console/")
NOT_CHECKED_FIRST = ("/console/signin",)


def checked_first(path: str) -> bool:
    if path.startswith(NOT_CHECKED_FIRST):
        return False
    return any(path == prefix.rstrip("/") or path.startswith(prefix.rstrip("/") + "/") for prefix in CHECKED_FIRST)


def body_limits(max_bytes: int, authenticated: bool) -> tuple[list[Middleware], Callable[[ASGIApp], ASGIApp]]:
    """The body cap around the whole app, and what wraps each endpoint behind the token check
    (`AuthGateway(after_auth=)`): the full cap, and the end of the work when the client leaves."""
    if not authenticated:
        return [Middleware(BodyLimit, max_bytes=max_bytes)], CancelOnDisconnect
    small = min(max_bytes, UNAUTHENTICATED_MAX_BYTES)
    outer = Middleware(BodyLimit, max_bytes=small, why=UNAUTHENTICATED_CAP, later=checked_first)
    return [outer], lambda app: BodyLimit(CancelOnDisconnect(app), max_bytes)


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
