"""Signing in to the console with the owner secret, and signing out.

The owner secret is the one the consent page asks for, checked by the same `OwnerChecks`
(`symbiote.auth.owner`): one budget per address (an IPv6 /64 counts as one), one check per
address at a time, at most two in flight for the whole server, the alert's slow-down. Wrong
guesses here and there share it, and a locked source is refused without any hashing work.
"""

from __future__ import annotations

import math

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from symbiote.auth import address_key, client_address
from symbiote.console.forms import checked_form, text
from symbiote.console.gate import visit_of
from symbiote.console.rendering import page, problem
from symbiote.console.state import console_state

MAX_SECRET_LENGTH = 1024


def _home(request: Request) -> str:
    return f"{request.scope.get('root_path', '')}/"


async def signin_page(request: Request) -> Response:
    access = console_state(request).access
    if access.mode == "none" or visit_of(request).session is not None:
        return RedirectResponse(_home(request), status_code=303)
    configured = access.checks is not None and access.checks.owner.configured
    return page(request, "signin.html", configured=configured, error="")


def _wait_page(request: Request, wait: float) -> Response:
    seconds = max(1, math.ceil(wait))
    message = f"Too many wrong attempts. Try again in {seconds} seconds."
    response = page(request, "signin.html", status=429, configured=True, error=message)
    response.headers["Retry-After"] = str(seconds)
    return response


async def signin(request: Request) -> Response:
    access = console_state(request).access
    if access.mode == "none":
        return RedirectResponse(_home(request), status_code=303)
    checks = access.checks
    if checks is None or not checks.owner.configured:
        return page(request, "signin.html", status=503, configured=False, error="")
    source = address_key(client_address(request.scope, access.trust_forwarded))
    if checks.retry_after(source) > 0:  # fast path: no form read, no queueing, no hashing
        return _wait_page(request, checks.retry_after(source))
    form = await request.form()
    attempt = text(form, "secret")[:MAX_SECRET_LENGTH]
    correct = await checks.check(source, attempt)
    if correct is None:
        return _wait_page(request, checks.retry_after(source))
    if not correct:
        return page(request, "signin.html", status=401, configured=True, error="That is not the owner secret.")
    visit = visit_of(request)
    visit.session, visit.new_cookie = await anyio.to_thread.run_sync(access.sessions.new)
    return RedirectResponse(_home(request), status_code=303)


async def signout(request: Request) -> Response:
    access = console_state(request).access
    form = await checked_form(request)
    if form is None:
        return problem(request, "This form has expired; reload the page and try again.", status=403)
    visit = visit_of(request)
    if visit.session is not None:
        await anyio.to_thread.run_sync(access.sessions.revoke, visit.session)
    visit.session, visit.new_cookie, visit.clear_cookie = None, None, True
    target = "signin" if access.mode != "none" else ""
    return RedirectResponse(f"{request.scope.get('root_path', '')}/{target}", status_code=303)
