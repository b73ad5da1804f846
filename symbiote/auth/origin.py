"""The public origin a request came in on: what the issuer and resource URLs are built from.

Behind Azure's proxy (Container Apps ingress, the Functions host) TLS ends before the app, so
the scheme and host name the client used arrive in X-Forwarded-Proto / X-Forwarded-Host. Those
headers are read only when trusted (SYMBIOTE_TRUST_FORWARDED_HEADERS, on by default when the
platform's host names are known), and the host name must be one the server answers to anyway
(the DNS-rebinding allow-list), so a forged header cannot point the issuer somewhere else.
SYMBIOTE_PUBLIC_URL, when set, wins over all of it.
"""

from __future__ import annotations

import contextvars
import ipaddress
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.types import Scope

from symbiote.config import Settings
from symbiote.platform_hosts import is_loopback

# The origin of the HTTP request being served (None over stdio); tools build links from it.
current_origin: contextvars.ContextVar[str | None] = contextvars.ContextVar("symbiote_origin", default=None)

DEFAULT_PORTS = {"http": "80", "https": "443"}


def trusts_forwarded_headers(settings: Settings) -> bool:
    if settings.trust_forwarded_headers is not None:
        return settings.trust_forwarded_headers
    return bool(settings.platform_hosts) or settings.behind_functions_host


def _host_allowed(host: str, patterns: list[str]) -> bool:
    for pattern in patterns:
        if host == pattern:
            return True
        if pattern.endswith(":*") and host.startswith(pattern[:-1]) and host[len(pattern) - 1 :].isdigit():
            return True
    return False


def canonical_origin(scheme: str, host: str) -> str:
    host = host.strip().lower()
    name, _, port = host.rpartition(":") if not host.endswith("]") else (host, "", "")
    if name and port and DEFAULT_PORTS.get(scheme) == port:
        host = name
    return f"{scheme}://{host}"


def public_url_origin(settings: Settings) -> str | None:
    if not settings.public_url:
        return None
    parts = urlsplit(settings.public_url)
    return canonical_origin(parts.scheme, parts.netloc)


class OriginResolver:
    """Finds the public origin of a request, or None when the Host is not one we answer to."""

    def __init__(self, settings: Settings, allowed_host_patterns: list[str]) -> None:
        self.fixed = public_url_origin(settings)
        self.trust_forwarded = trusts_forwarded_headers(settings)
        self.patterns = [pattern.lower() for pattern in allowed_host_patterns]
        # The platform's own names (*.azurewebsites.net, *.azurecontainerapps.io) are only ever
        # served over HTTPS by its ingress, whatever scheme reaches the app behind it.
        self.https_only = {name for name in settings.platform_hosts if not is_loopback(name)}

    def __call__(self, scope: Scope) -> str | None:
        headers = Headers(scope=scope)
        host = headers.get("host", "")
        scheme = scope.get("scheme", "http")
        if self.trust_forwarded:
            host = headers.get("x-forwarded-host", "").split(",")[0].strip() or host
            scheme = headers.get("x-forwarded-proto", "").split(",")[0].strip().lower() or scheme
        scheme = scheme if scheme in ("http", "https") else "http"
        host = host.strip().lower()
        if not host or not _host_allowed(host, self.patterns):
            return None
        if host.rsplit(":", 1)[0] in self.https_only:
            scheme = "https"
        return self.fixed or canonical_origin(scheme, host)


def forwarded_client(header: str) -> str | None:
    """The address the proxy in front of us saw: the last entry of X-Forwarded-For.

    Each proxy appends the address it received the request from, so the entries before the last
    are whatever the client chose to send and are never used. Azure App Service writes
    `address:port`, Container Apps the bare address; both give the address.
    """
    entry = header.rsplit(",", 1)[-1].strip()
    if entry.startswith("["):  # [v6]:port
        entry = entry[1 : entry.find("]")] if "]" in entry else ""
    elif entry.count(":") == 1:  # v4:port
        entry = entry.split(":", 1)[0]
    try:
        return str(ipaddress.ip_address(entry))
    except ValueError:
        return None


def client_address(scope: Scope, trust_forwarded: bool) -> str:
    """Who is asking: the proxy's X-Forwarded-For client when SYMBIOTE_TRUST_FORWARDED_HEADERS
    says the proxy is ours, else the connection's own address."""
    if trust_forwarded:
        forwarded = forwarded_client(Headers(scope=scope).get("x-forwarded-for", ""))
        if forwarded:
            return forwarded
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


def address_key(address: str) -> str:
    """What rate limits count by: the address, or its /64 for IPv6 (one subscriber's whole block)."""
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(parsed, ipaddress.IPv6Address):
        if parsed.ipv4_mapped is not None:
            return str(parsed.ipv4_mapped)
        return str(ipaddress.ip_network(f"{parsed}/64", strict=False))
    return str(parsed)
