"""The 401 a request without a valid bearer token gets: where to sign in, and for which scope.

The SDK's `RequireAuthMiddleware` names the protected-resource metadata in its challenge but no
scope. MCP's authorization (2025-11-25 and 2026-07-28) says the challenge SHOULD carry `scope`
and that a client takes the scope to request from it first, before the metadata's
`scopes_supported`. Symbiote has one scope, `memory`, so every challenge names it.
"""

from __future__ import annotations

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from symbiote.auth.provider import SCOPE


class RequireToken:
    """`app` for a request the bearer backend authenticated; the challenge for any other."""

    def __init__(self, app: ASGIApp, resource_metadata_url: str, oauth_scope: str = SCOPE) -> None:
        self.app = app
        self.challenge = (
            f'Bearer error="invalid_token", error_description="Authentication required", '
            f'resource_metadata="{resource_metadata_url}", scope="{oauth_scope}"'
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if isinstance(scope.get("user"), AuthenticatedUser):
            await self.app(scope, receive, send)
            return
        refused = JSONResponse(
            {"error": "invalid_token", "error_description": "Authentication required"},
            status_code=401,
            headers={"WWW-Authenticate": self.challenge},
        )
        await refused(scope, receive, send)
