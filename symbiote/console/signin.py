"""Signing in to the console with the owner secret, and signing out.

The owner secret is the one the consent page asks for (`symbiote.auth.owner`), checked with
scrypt in a worker thread behind the same `SignInLimiter`, so wrong guesses here and there
share one budget and a locked source is refused without any hashing work.
"""

from __future__ import annotations

import asyncio
import math

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from symbiote.auth.origin import client_address
from symbiote.console.gate import Access, visit_of
from symbiote.console.memories import checked_form
from symbiote.console.rendering import page, problem

MAX_SECRET_LENGTH = 1024


def _home(request: Request) -> str:
    return f"{request.scope.get('root_path', '')}/"


async def signin_page(request: Request) -> Response:
    access: Access = request.app.state.console_access
    if access.mode == "none" or visit_of(request).session is not None:
        return RedirectResponse(_home(request), status_code=303)
    configured = access.owner is not None and access.owner.configured
    return page(request, "signin.html", configured=configured, error="")


async def signin(request: Request) -> Response:
    access: Access = request.app.state.console_access
    if access.mode == "none":
        return RedirectResponse(_home(request), status_code=303)
    if access.owner is None or access.limiter is None or not access.owner.configured:
        return page(request, "signin.html", status=503, configured=False, error="")
    source = client_address(request.scope, access.trust_forwarded)
    wait = access.limiter.retry_after(source)
    if wait > 0:
        message = f"Too many wrong attempts. Try again in {math.ceil(wait)} seconds."
        return page(request, "signin.html", status=429, configured=True, error=message)
    form = await request.form()
    attempt = str(form.get("secret", ""))[:MAX_SECRET_LENGTH]
    if not await asyncio.to_thread(access.owner.verify, attempt):
        access.limiter.failure(source)
        return page(request, "signin.html", status=401, configured=True, error="That is not the owner secret.")
    access.limiter.success(source)
    visit = visit_of(request)
    visit.session, visit.new_cookie = access.sessions.new()
    return RedirectResponse(_home(request), status_code=303)


async def signout(request: Request) -> Response:
    access: Access = request.app.state.console_access
    form = await checked_form(request)
    if form is None:
        return problem(request, "This form has expired; reload the page and try again.", status=403)
    visit = visit_of(request)
    if visit.session is not None:
        access.sessions.revoke(visit.session)
    visit.session, visit.new_cookie, visit.clear_cookie = None, None, True
    target = "signin" if access.mode != "none" else ""
    return RedirectResponse(f"{request.scope.get('root_path', '')}/{target}", status_code=303)
