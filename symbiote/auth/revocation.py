"""Token revocation (RFC 7009) for every client type this server registers.

The SDK's handler requires a `client_secret` form field, so public clients and clients that
authenticate with HTTP Basic could not revoke. Here the client authenticates the way it
registered (`symbiote.auth.client_auth`), the token is looked up whatever its type hint, and a
token issued to that client ends its whole grant. An unknown token, or one issued to another
client, gets the same empty 200 (§2.2): the answer tells nothing about tokens one does not hold.
"""

from __future__ import annotations

from typing import Any

from mcp.server.auth.middleware.client_auth import AuthenticationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from symbiote.auth.client_auth import HashedSecretAuthenticator

NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}


class Revocation:
    """POST /revoke."""

    def __init__(self, provider: Any, authenticator: HashedSecretAuthenticator) -> None:
        self.provider = provider
        self.authenticator = authenticator

    async def handle(self, request: Request) -> Response:
        try:
            client = await self.authenticator.authenticate_request(request)
        except AuthenticationError as exc:
            headers = dict(NO_STORE)
            if request.headers.get("Authorization", "").startswith("Basic "):
                headers["WWW-Authenticate"] = 'Basic realm="symbiote"'
            return JSONResponse({"error": "invalid_client", "error_description": exc.message}, 401, headers)
        form = await request.form()
        token = form.get("token")
        if not isinstance(token, str) or not token:
            return JSONResponse(
                {
                    "error": "invalid_request",
                    "error_description": "the token to revoke is missing (form field `token`)",
                },
                400,
                NO_STORE,
            )
        loaders = [self.provider.load_access_token, lambda value: self.provider.load_refresh_token(client, value)]
        if form.get("token_type_hint") == "refresh_token":
            loaders.reverse()
        for load in loaders:
            found = await load(token)
            if found is not None:
                if found.client_id == client.client_id:
                    await self.provider.revoke_token(found)
                break
        return Response(status_code=200, headers=NO_STORE)
