"""DNS-rebinding protection: which Host and Origin headers the HTTP transports accept.

Always on. Loopback names are always allowed; deployed names come from the platform's
environment (`symbiote.platform_hosts`) and from configuration (SYMBIOTE_ALLOWED_HOSTS), each
accepted with and without a port. A browser's Origin header must be one of ours, one in
SYMBIOTE_ALLOWED_ORIGINS, or one the CORS configuration allows (SYMBIOTE_CORS_ORIGINS).
"""

from __future__ import annotations

from mcp.server.transport_security import TransportSecuritySettings

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
