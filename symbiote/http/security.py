"""Which Host and Origin headers the HTTP transports accept, and whose address a request has.

DNS-rebinding protection is always on. Loopback names are always allowed; deployed names come
from the platform's environment (`symbiote.platform_hosts`) and from configuration
(SYMBIOTE_ALLOWED_HOSTS), each accepted with and without a port. A browser's Origin header must
be one of ours, one in SYMBIOTE_ALLOWED_ORIGINS, or one the CORS configuration allows
(SYMBIOTE_CORS_ORIGINS).

X-Forwarded-* headers are read only when SYMBIOTE_TRUST_FORWARDED_HEADERS says a proxy of ours
is in front (on by default on Azure, whose ingress sets them): then `ForwardedClient` makes the
address the proxy saw the request's client, for the access log and every per-address limit.
Otherwise anyone could name any address (uvicorn's own proxy handling is off, see `cli.serve`).
"""

from __future__ import annotations

from mcp.server.transport_security import TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from symbiote.auth import forwarded_client
from symbiote.config import Settings

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")


def deployed_hosts(settings: Settings) -> list[str]:
    """The public names: derived from the platform, then configured."""
    return list(dict.fromkeys([*settings.platform_hosts, *settings.allowed_hosts]))


def allowed_hosts(settings: Settings) -> list[str]:
    names = list(dict.fromkeys([*LOOPBACK_HOSTS, *deployed_hosts(settings)]))
    return [variant for name in names for variant in (name, f"{name}:*")]


def allowed_origins(settings: Settings) -> list[str]:
    origins = [f"http://{name}:*" for name in LOOPBACK_HOSTS] + [f"http://{name}" for name in LOOPBACK_HOSTS]
    origins += [f"https://{name}" for name in deployed_hosts(settings)]
    return list(dict.fromkeys([*origins, *settings.allowed_origins, *settings.cors_origins]))


def transport_security(settings: Settings) -> TransportSecuritySettings:
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=allowed_hosts(settings),
        allowed_origins=allowed_origins(settings),
    )


class ForwardedClient:
    """The client address from the trusted proxy's X-Forwarded-For (its last entry), in place."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            forwarded = forwarded_client(Headers(scope=scope).get("x-forwarded-for", ""))
            if forwarded:
                scope["client"] = (forwarded, 0)  # the access log reads this same scope
        await self.app(scope, receive, send)
