"""The answer to a request the bearer token does not let through, by the letter of RFC 6750 §3.

- No bearer token at all: 401 with a challenge that carries no error code (§3.1: a request that
  lacks any authentication information gets none), only where to sign in.
- A token that is not good here (unknown, expired, revoked, or issued for another server): 401
  with `error="invalid_token"`.
- A good token without the scope: 403 with `error="insufficient_scope"`.

Every challenge names the route's protected-resource metadata (RFC 9728 §5.1, `resource_metadata`)
and the scope. The SDK's `RequireAuthMiddleware` names no scope and sends `invalid_token` to a
request without a token; MCP's authorization (2025-11-25 and 2026-07-28) says the challenge SHOULD
carry `scope`, which a client takes first, before the metadata's `scopes_supported`. Symbiote has
one scope, `memory`, so every challenge names it.
"""

from __future__ import annotations

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from starlette.authentication import AuthCredentials
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from symbiote.auth.provider import SCOPE


def has_bearer_token(scope: Scope) -> bool:
    """Whether the request presented a bearer token (good or not) in its Authorization header."""
    scheme, _, token = Headers(scope=scope).get("authorization", "").strip().partition(" ")
    return scheme.lower() == "bearer" and bool(token.strip())


class RequireToken:
    """`app` for a request the bearer backend authenticated with the scope; the challenge for any other."""

    def __init__(self, app: ASGIApp, resource_metadata_url: str, oauth_scope: str = SCOPE) -> None:
        self.app = app
        self.scope = oauth_scope
        self.where = f'resource_metadata="{resource_metadata_url}", scope="{oauth_scope}"'

    def _challenge(self, error: str | None, description: str) -> str:
        if error is None:
            return f"Bearer {self.where}"
        return f'Bearer error="{error}", error_description="{description}", {self.where}'

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        user = scope.get("user")
        if isinstance(user, AuthenticatedUser):
            credentials = scope.get("auth")
            if isinstance(credentials, AuthCredentials) and self.scope in credentials.scopes:
                await self.app(scope, receive, send)
                return
            description = f"This token lacks the {self.scope} scope"
            status, error, body = 403, "insufficient_scope", {"error": "insufficient_scope"}
        elif has_bearer_token(scope):
            description = "The access token is unknown, expired, revoked or for another server"
            status, error, body = 401, "invalid_token", {"error": "invalid_token"}
        else:
            description = "Authentication required: sign in with OAuth or send an API key as a bearer token"
            status, error, body = 401, None, {}
        refused = JSONResponse(
            {**body, "error_description": description},
            status_code=status,
            headers={"WWW-Authenticate": self._challenge(error, description)},
        )
        await refused(scope, receive, send)
