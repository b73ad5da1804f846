"""Client authentication at the token and revocation endpoints (RFC 6749 §2.3, RFC 7009 §2.1).

Every kind of client this server registers can authenticate: a confidential client with its
secret in the form (`client_secret_post`) or in HTTP Basic (`client_secret_basic`), and a public
client (`none`: native apps, Client ID Metadata Document clients) by its `client_id` alone, its
PKCE verifier or the token itself being what proves it. Client secrets are stored as digests
only, so the presented secret is hashed and compared in constant time.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import time
from urllib.parse import unquote

from mcp.server.auth.middleware.client_auth import AuthenticationError, ClientAuthenticator
from mcp.shared.auth import OAuthClientInformationFull
from starlette.requests import Request

from symbiote.auth._sqlite import digest

SECRET_METHODS = ("client_secret_post", "client_secret_basic")


def basic_credentials(request: Request) -> tuple[str, str] | None:
    """(client_id, secret) from `Authorization: Basic`, None without one; AuthenticationError if malformed."""
    header = request.headers.get("Authorization", "")
    if not header.startswith("Basic "):
        return None
    try:
        decoded = base64.b64decode(header[6:], validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError, binascii.Error):
        raise AuthenticationError("Invalid Basic authentication header") from None
    if ":" not in decoded:
        raise AuthenticationError("Invalid Basic authentication header")
    client_id, secret = decoded.split(":", 1)
    return unquote(client_id), unquote(secret)  # RFC 6749 §2.3.1: form-encoded before Basic


class HashedSecretAuthenticator(ClientAuthenticator):
    """The SDK's `ClientAuthenticator` interface, for every registered client type."""

    async def authenticate_request(self, request: Request) -> OAuthClientInformationFull:
        form = await request.form()
        basic = basic_credentials(request)
        form_id = form.get("client_id")
        client_id = form_id if isinstance(form_id, str) and form_id else (basic[0] if basic else "")
        if not client_id:
            raise AuthenticationError("Missing client_id")
        if basic is not None and basic[0] != client_id:
            raise AuthenticationError("Client ID mismatch in Basic auth")
        client: OAuthClientInformationFull | None = await self.provider.get_client(client_id)
        if client is None:
            raise AuthenticationError("Invalid client_id")
        method = client.token_endpoint_auth_method or "client_secret_post"
        if method == "none":
            return client
        if method not in SECRET_METHODS or not client.client_secret:
            raise AuthenticationError("Client is registered for an authentication method this server cannot check")
        posted = form.get("client_secret")
        presented = basic[1] if basic is not None else (posted if isinstance(posted, str) else "")
        if not presented or not hmac.compare_digest(digest(presented), client.client_secret):
            raise AuthenticationError("Invalid client_secret")
        if client.client_secret_expires_at and client.client_secret_expires_at < int(time.time()):
            raise AuthenticationError("Client secret has expired")
        return client.model_copy(update={"client_secret": presented})
