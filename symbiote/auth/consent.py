"""The consent page: the only place an authorization code is minted.

`/authorize` (the SDK's handler) validates the client and redirect URI, then our provider parks
the request and redirects here. The owner sees which client asks (its name and where it will send
the code), types the owner secret, and approves or denies. Wrong secrets are throttled by
`OwnerChecks` (the limiter, one check per address, a global cap) before any check is made, per
address: strangers' failures slow everyone down a little but never lock the owner out.
"""

from __future__ import annotations

import html
import logging
import math
from typing import Any
from urllib.parse import urlsplit

import anyio.to_thread
from mcp.server.auth.provider import construct_redirect_uri
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from symbiote.auth.auth_store import AuthStore
from symbiote.auth.client_metadata import is_metadata_url
from symbiote.auth.origin import address_key, client_address
from symbiote.auth.overflow import OverflowTickets
from symbiote.auth.owner import OwnerChecks

log = logging.getLogger("symbiote.auth")
MAX_FORM_BYTES = 8192

SECURITY_HEADERS = {
    "Cache-Control": "no-store",
    "Pragma": "no-cache",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'",
}

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Symbiote: {title}</title>
<style>
body{{font-family:system-ui,sans-serif;background:#0d0d0f;color:#eee;display:flex;justify-content:center;padding:4em 1em}}
main{{max-width:30em;width:100%;background:#1a1a1f;border-radius:12px;padding:2em;box-shadow:0 4px 24px #0008}}
h1{{font-size:1.3em;margin-top:0}} code{{background:#000;padding:0 .3em;border-radius:4px;word-break:break-all}}
input[type=password]{{width:100%;padding:.6em;font-size:1em;margin:.5em 0 1em;box-sizing:border-box;border-radius:6px;border:1px solid #444;background:#000;color:#eee}}
button{{padding:.6em 1.2em;font-size:1em;border-radius:6px;border:0;margin-right:.5em;cursor:pointer}}
.approve{{background:#e8e8e8;color:#000}} .deny{{background:#333;color:#eee}}
.error{{background:#4a1212;padding:.7em;border-radius:6px}} .meta{{color:#aaa;font-size:.9em}}
</style></head><body><main>{body}</main></body></html>"""


def _page(title: str, body: str, status: int = 200, headers: dict[str, str] | None = None) -> HTMLResponse:
    return HTMLResponse(
        PAGE.format(title=html.escape(title), body=body),
        status_code=status,
        headers={**SECURITY_HEADERS, **(headers or {})},
    )


def _expired() -> HTMLResponse:
    return _page(
        "sign-in expired",
        "<h1>This sign-in request has expired or was already used.</h1>"
        "<p>Start again from the app you were connecting (Claude, ChatGPT, ...).</p>",
        status=400,
    )


def _destination(redirect_uri: str) -> str:
    """Where the code goes, as the browser will go there: scheme, host and port, never a user name."""
    parts = urlsplit(redirect_uri)
    if not parts.hostname:
        return f"{parts.scheme}:"
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{parts.scheme}://{host}{f':{parts.port}' if parts.port else ''}"


def _publisher(client_id: str) -> str:
    """For a metadata-document client, the host that published its name: what vouches for it."""
    if not is_metadata_url(client_id):
        return ""
    host = urlsplit(client_id).hostname or ""
    return f"<br>Described by <code>{html.escape(host)}</code> (its name above is what that site says)"


class ConsentEndpoint:
    """GET shows the approval form; POST checks the owner secret and mints the code."""

    def __init__(self, store: AuthStore, checks: OwnerChecks, trust_forwarded: bool, overflow: OverflowTickets) -> None:
        """`overflow`: the tickets of sign-ins that found the waiting ones full (`symbiote.auth.overflow`)."""
        self.store = store
        self.checks = checks
        self.owner = checks.owner
        self.trust_forwarded = trust_forwarded
        self.overflow = overflow

    async def _find(self, ticket: str) -> tuple[str, dict[str, Any]] | None:
        if not ticket:
            return None
        if self.overflow.holds(ticket):
            return self.overflow.read(ticket)
        return await anyio.to_thread.run_sync(self.store.get_pending, ticket)

    async def _take(self, ticket: str) -> tuple[str, dict[str, Any]] | None:
        """The parked request, exactly once."""
        if self.overflow.holds(ticket):
            return self.overflow.take(ticket)
        return await anyio.to_thread.run_sync(self.store.pop_pending, ticket)

    def _throttled(self, source: str) -> HTMLResponse:
        seconds = max(1, math.ceil(self.checks.retry_after(source)))
        return _page(
            "try again later",
            f"<h1>Too many wrong owner secrets.</h1><p>Try again in {seconds} seconds: go back and approve again.</p>",
            status=429,
            headers={"Retry-After": str(seconds)},
        )

    async def __call__(self, request: Request) -> Response:
        if request.method == "GET":
            return await self.show(request)
        return await self.decide(request)

    async def _client_name(self, client_id: str, params: dict[str, Any]) -> str:
        if params.get("client_name"):
            return str(params["client_name"])
        found = await anyio.to_thread.run_sync(self.store.get_client, client_id)
        info = found[0] if found else {}
        return str(info.get("client_name") or "An unnamed app")

    async def _form(
        self,
        ticket: str,
        client_id: str,
        params: dict[str, Any],
        error: str = "",
        status: int = 200,
        headers: dict[str, str] | None = None,
    ) -> HTMLResponse:
        name = await self._client_name(client_id, params)
        if not self.owner.configured:
            return _page(
                "sign-in disabled",
                "<h1>Sign-in is not set up on this server.</h1><p>The server has no owner secret. Set "
                "<code>SYMBIOTE_OWNER_SECRET</code> in its configuration, restart it, and connect again.</p>",
                status=503,
            )
        problem = f'<p class="error" role="alert">{html.escape(error)}</p>' if error else ""
        body = f"""<h1>Allow <strong>{html.escape(name)}</strong> to use your Symbiote memory?</h1>
<p>It will be able to read, add and delete your memories until you revoke it.</p>
<p class="meta">After approval you return to <code>{html.escape(_destination(params["redirect_uri"]))}</code><br>
Client id <code>{html.escape(client_id)}</code>{_publisher(client_id)}</p>
{problem}
<form method="post" action="/oauth/consent">
<input type="hidden" name="ticket" value="{html.escape(ticket)}">
<label for="owner_secret">Owner secret</label>
<input type="password" id="owner_secret" name="owner_secret" autocomplete="current-password" autofocus>
<button class="approve" type="submit" name="decision" value="approve">Approve</button>
<button class="deny" type="submit" name="decision" value="deny">Deny</button>
</form>"""
        return _page("approve access", body, status=status, headers=headers)

    async def show(self, request: Request) -> Response:
        ticket = request.query_params.get("ticket", "")
        found = await self._find(ticket)
        if found is None:
            return _expired()
        return await self._form(ticket, found[0], found[1])

    async def decide(self, request: Request) -> Response:
        length = request.headers.get("content-length", "")
        if not (length.isascii() and length.isdigit()) or int(length) > MAX_FORM_BYTES:
            return _page("bad request", "<h1>Bad request.</h1>", status=400)
        form = await request.form()
        ticket, secret, decision = (str(form.get(key) or "") for key in ("ticket", "owner_secret", "decision"))
        source = address_key(client_address(request.scope, self.trust_forwarded))
        if decision == "approve" and self.checks.retry_after(source) > 0:
            return self._throttled(source)  # fast path: no database, no queueing, no hashing
        found = await self._find(ticket)
        if found is None:
            return _expired()
        client_id, params = found
        issuer = params["origin"]
        if decision == "deny":
            if await self._take(ticket) is None:
                return _expired()
            log.info("sign-in denied by the owner for client %s", client_id)
            target = construct_redirect_uri(
                params["redirect_uri"],
                error="access_denied",
                error_description="The owner denied access.",
                state=params["state"],
                iss=issuer,
            )
            return RedirectResponse(target, status_code=302, headers=SECURITY_HEADERS)
        if decision != "approve":
            return await self._form(ticket, client_id, params, "Choose Approve or Deny.", status=400)
        if not self.owner.configured:
            return await self._form(ticket, client_id, params)
        correct = await self.checks.check(source, secret)
        if correct is None:
            return self._throttled(source)
        if not correct:
            log.warning("wrong owner secret on the consent page (client %s, from %s)", client_id, source)
            return await self._form(ticket, client_id, params, "That is not the owner secret.", status=401)
        taken = await self._take(ticket)
        if taken is None:
            return _expired()
        code_data = {
            key: params[key]
            for key in ("scopes", "code_challenge", "redirect_uri", "redirect_uri_provided_explicitly", "resource")
        }
        code, _expires = await anyio.to_thread.run_sync(self.store.add_code, client_id, code_data)
        log.info("the owner approved client %s", client_id)
        target = construct_redirect_uri(params["redirect_uri"], code=code, state=params["state"], iss=issuer)
        return RedirectResponse(target, status_code=302, headers=SECURITY_HEADERS)
