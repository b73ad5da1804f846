"""Who may reach the console: the same Host and Origin rules as `/mcp`, then the owner's session.

In front of every console request: the DNS-rebinding checks `/mcp` applies (the MCP SDK's
`TransportSecurityMiddleware` with the server's own allow-lists), HTTPS anywhere but loopback when
auth is on (the session cookie is Secure there), and for a write, a request from the console's own
origin only. Then the session: with auth on, a page without one leads to the sign-in page; with
auth off (a loopback-only server) a session is issued on the first visit, so CSRF tokens work the
same way in both. API keys and OAuth access tokens are never looked at: they are given to
assistants, and the console's bulk export and delete are for the person holding the owner secret.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import anyio.to_thread
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.datastructures import Headers, MutableHeaders
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from symbiote.auth import AuthStoreUnavailable, OriginResolver, OwnerChecks
from symbiote.console.session import COOKIE, Session, Sessions
from symbiote.platform_hosts import is_loopback

log = logging.getLogger(__name__)
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
OPEN_PATHS = ("/signin", "/static/")  # reachable without a session
SECURITY_HEADERS = {
    "content-security-policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
}


@dataclass(frozen=True)
class Access:
    """The console's access rules, built once by the app factory from the server's settings."""

    mode: str  # "none" (loopback only) or "oauth"
    resolver: OriginResolver
    security: TransportSecuritySettings
    sessions: Sessions
    checks: OwnerChecks | None = None  # the owner secret's checks, shared with the consent page
    trust_forwarded: bool = False


@dataclass
class Visit:
    """What the gate found out about a request, for the pages (`request.scope["symbiote_console"]`)."""

    origin: str
    secure: bool  # the cookie gets Secure (anywhere but loopback)
    session: Session | None
    new_cookie: str | None = None
    clear_cookie: bool = False


def visit_of(request: Request) -> Visit:
    """What the gate found out about this request (it runs in front of every page)."""
    visit = request.scope["symbiote_console"]
    if not isinstance(visit, Visit):
        raise TypeError("no console visit: the request did not come through ConsoleGate")
    return visit


def cookie_header(value: str, *, path: str, secure: bool, max_age: int) -> str:
    parts = [f"{COOKIE}={value}", f"Path={path or '/'}", f"Max-Age={max_age}", "HttpOnly", "SameSite=Strict"]
    if secure:
        parts.append("Secure")
    return "; ".join(parts)


class ConsoleGate:
    """ASGI middleware around the console's routes."""

    def __init__(self, app: ASGIApp, access: Access) -> None:
        self.app = app
        self.access = access
        self._transport = TransportSecurityMiddleware(access.security)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = await self._refusal(scope)
        if isinstance(refusal, Response):
            await refusal(scope, receive, send)
            return
        visit = refusal
        scope["symbiote_console"] = visit
        root = scope.get("root_path", "")
        path = scope["path"][len(root) :] if scope["path"].startswith(root) else scope["path"]
        if visit.session is None and not path.startswith(OPEN_PATHS):
            if scope["method"] in SAFE_METHODS:
                await RedirectResponse(f"{root}/signin", status_code=303)(scope, receive, send)
            else:
                await PlainTextResponse("Sign in to the console first.", status_code=401)(scope, receive, send)
            return

        async def decorated(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    headers.setdefault(name, value)
                if not path.startswith("/static/"):
                    headers.setdefault("cache-control", "no-store")
                if visit.new_cookie is not None:
                    max_age = self.access.sessions.lifetime
                    headers.append(
                        "set-cookie", cookie_header(visit.new_cookie, path=root, secure=visit.secure, max_age=max_age)
                    )
                elif visit.clear_cookie:
                    headers.append("set-cookie", cookie_header("", path=root, secure=visit.secure, max_age=0))
            await send(message)

        await self.app(scope, receive, decorated)

    async def _refusal(self, scope: Scope) -> Response | Visit:
        """A refusal to send, or what is known about an acceptable request."""
        request = Request(scope)
        refused = await self._transport.validate_request(request, is_post=False)  # exactly /mcp's Host and Origin rules
        if refused is not None:
            return refused
        origin = self.access.resolver(scope)
        if origin is None:
            return PlainTextResponse("Invalid Host header", status_code=421)
        loopback = is_loopback(urlsplit(origin).hostname or "")
        if self.access.mode != "none" and not origin.startswith("https://") and not loopback:
            return PlainTextResponse(
                "The console needs HTTPS here: reach this server over https (behind a TLS proxy, with "
                "SYMBIOTE_TRUST_FORWARDED_HEADERS=1) or set SYMBIOTE_PUBLIC_URL.",
                status_code=400,
            )
        headers = Headers(scope=scope)
        if scope["method"] not in SAFE_METHODS and not _same_origin(headers, origin):
            return PlainTextResponse("Console writes must come from the console's own pages.", status_code=403)
        cookie = request.cookies.get(COOKIE)
        try:  # the key file and the sign-in database: off the event loop
            session = await anyio.to_thread.run_sync(self.access.sessions.check, cookie) if cookie else None
        except (AuthStoreUnavailable, OSError) as exc:
            log.error("console sessions cannot be checked: %s", exc)
            return PlainTextResponse(f"The console cannot check sign-ins right now: {exc}", status_code=503)
        visit = Visit(origin=origin, secure=not loopback, session=session)
        if session is None and self.access.mode == "none":
            visit.session, visit.new_cookie = self.access.sessions.new()
        return visit


def _same_origin(headers: Headers, origin: str) -> bool:
    """A browser's write from the console's own origin (Sec-Fetch-Site, Origin); tools without
    those headers are left to the CSRF token."""
    site = headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return False
    sent = headers.get("origin")
    return sent is None or sent.lower().rstrip("/") == origin


def context_of(request: Request) -> dict[str, Any]:
    """What every page's template needs about the visit."""
    visit = visit_of(request)
    return {
        "base": request.scope.get("root_path", ""),
        "csrf": visit.session.csrf if visit.session else "",
        "signed_in": visit.session is not None,
        "origin": visit.origin,  # the public origin: the empty console names this server's /mcp URL
    }
