"""Open client registration (RFC 7591) with limits: what one registration may hold, and how many.

Anyone may register a client, so a registration is checked before the SDK's handler sees it:
every field has a size limit (a clear 400 naming the field), and registrations are counted per
address and in total (429 with Retry-After past the budget). A real connector registers a
handful of times a day; the defaults (SYMBIOTE_REGISTRATIONS_PER_MINUTE per address,
SYMBIOTE_REGISTRATIONS_PER_HOUR in total) leave room for that and for nothing like a flood.
Registrations never approved are dropped after an hour (`_oauth_records`), and a flood never
touches clients already registered or sign-ins in progress. SYMBIOTE_OPEN_REGISTRATION=off
removes the endpoint altogether (clients then use a Client ID Metadata Document).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from mcp.server.auth.handlers.register import RegistrationHandler
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from symbiote.auth.origin import address_key, client_address
from symbiote.auth.rates import RateBudget, too_many

log = logging.getLogger("symbiote.auth")

MAX_REGISTRATION_BYTES = 8 * 1024
MAX_URIS = 10
MAX_URL_CHARS = 1000
MAX_LIST_ITEMS = 10
TEXT_LIMITS = {  # field: most characters
    "client_name": 200,
    "software_id": 200,
    "software_version": 100,
    "scope": 500,
    "token_endpoint_auth_method": 50,
    "application_type": 50,
    "client_uri": MAX_URL_CHARS,
    "logo_uri": MAX_URL_CHARS,
    "tos_uri": MAX_URL_CHARS,
    "policy_uri": MAX_URL_CHARS,
    "jwks_uri": MAX_URL_CHARS,
}
LIST_LIMITS = {  # field: (most items, most characters per item)
    "redirect_uris": (MAX_URIS, MAX_URL_CHARS),
    "contacts": (MAX_LIST_ITEMS, 320),
    "grant_types": (MAX_LIST_ITEMS, 100),
    "response_types": (MAX_LIST_ITEMS, 100),
}
MAX_JWKS_BYTES = 4096
# What the token endpoint honours (authorization code with PKCE, and refresh): a registration naming
# another grant or response type is refused (RFC 7591 §3.2.2), never echoed as if it would work.
GRANT_TYPES = ("authorization_code", "refresh_token")
RESPONSE_TYPES = ("code",)


def unhonoured(document: dict[str, Any]) -> str | None:
    """A registration's grant or response type the server will never honour, in words; else None."""
    for name, honoured in (("grant_types", GRANT_TYPES), ("response_types", RESPONSE_TYPES)):
        others = [item for item in document.get(name) or [] if item not in honoured]
        if others:
            return f"{name} {others} are not supported: this server issues tokens only by {' and '.join(honoured)}"
    return None


def metadata_problem(document: Any) -> str | None:
    """What is too large or malformed in client metadata (a registration or a metadata document)."""
    if not isinstance(document, dict):
        return "client metadata must be a JSON object"
    for name, most in TEXT_LIMITS.items():
        value = document.get(name)
        if value is not None and not isinstance(value, str):
            return f"{name} must be a string"
        if isinstance(value, str) and len(value) > most:
            return f"{name} is {len(value)} characters long; at most {most} are accepted"
    for name, (items, chars) in LIST_LIMITS.items():
        value = document.get(name)
        if value is None:
            continue
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            return f"{name} must be a list of strings"
        if len(value) > items:
            return f"{name} has {len(value)} entries; at most {items} are accepted"
        longest = max((len(item) for item in value), default=0)
        if longest > chars:
            return f"an entry of {name} is {longest} characters long; at most {chars} are accepted"
    if "jwks" in document and len(json.dumps(document["jwks"])) > MAX_JWKS_BYTES:
        return f"jwks is larger than {MAX_JWKS_BYTES} bytes"
    return None


def invalid_metadata(description: str) -> JSONResponse:
    return JSONResponse(
        {"error": "invalid_client_metadata", "error_description": description},
        status_code=400,
        headers={"Cache-Control": "no-store"},
    )


class LimitedRegistration:
    """POST /register: size limits and the registration budget, then the SDK's RFC 7591 handler."""

    def __init__(self, handler: RegistrationHandler, budget: RateBudget, trust_forwarded: bool) -> None:
        self.handler = handler
        self.budget = budget
        self.trust_forwarded = trust_forwarded

    async def handle(self, request: Request) -> Response:
        address = address_key(client_address(request.scope, self.trust_forwarded))
        wait = self.budget.admit(address)
        if wait > 0:
            log.warning("client registration refused: over the registration budget (from %s)", address)
            return too_many("client registrations", wait)
        body = await request.body()
        problem: str | None
        if len(body) > MAX_REGISTRATION_BYTES:
            problem = f"a registration is limited to {MAX_REGISTRATION_BYTES} bytes (got {len(body)})"
        else:
            try:
                document = json.loads(body)
                problem = metadata_problem(document) or unhonoured(document)
            except (ValueError, UnicodeDecodeError):
                problem = None  # not JSON: the SDK's handler says so in its own words
        if problem is not None:
            self.budget.refund(address)
            return invalid_metadata(problem)
        response = await self.handler.handle(request)
        if response.status_code != 201:
            self.budget.refund(address)
        return response
