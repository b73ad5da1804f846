"""RFC 9207: every authorization response names its issuer, and the metadata says so.

Symbiote's authorization responses come from two places: the consent page (the owner approved or
denied: `symbiote.auth.consent` adds `iss`) and the SDK's `/authorize` handler, which answers an
error it can send back to the client (a foreign `resource`, a malformed request from a known
client) with a redirect that lacks `iss`. MCP's 2026-07-28 authorization makes advertising
`authorization_response_iss_parameter_supported` a MUST for a server that sends `iss`, and a
client that reads it then rejects any response without `iss`: so both halves live here.
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

from mcp.server.auth.provider import construct_redirect_uri
from mcp.shared.auth import OAuthMetadata
from starlette.types import ASGIApp, Message, Receive, Scope, Send


def advertise_issuer_parameter(metadata: OAuthMetadata) -> None:
    """RFC 9207 §3: the authorization server's metadata says its responses carry `iss`."""
    metadata.authorization_response_iss_parameter_supported = True


class IssuerOnErrors:
    """`/authorize` with `iss` added to each error it redirects back to the client."""

    def __init__(self, app: ASGIApp, issuer: str) -> None:
        self.app = app
        self.issuer = issuer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_with_issuer(message: Message) -> None:
            if message["type"] == "http.response.start" and 300 <= message["status"] < 400:
                message = {**message, "headers": [self._header(name, value) for name, value in message["headers"]]}
            await send(message)

        await self.app(scope, receive, send_with_issuer)

    def _header(self, name: bytes, value: bytes) -> tuple[bytes, bytes]:
        if name.lower() != b"location":
            return name, value
        target = value.decode("latin-1")
        query = parse_qs(urlsplit(target).query)
        if "error" in query and "iss" not in query:
            target = construct_redirect_uri(target, iss=self.issuer)
        return name, target.encode("latin-1")
