"""The host names a deployed Symbiote is reached by, read from what the platform sets.

DNS-rebinding protection answers 421 to any Host header it does not know, so a deployed app
must accept its own public name without anyone typing it into a setting:

- Azure Functions (and App Service) set `WEBSITE_HOSTNAME`, e.g. `symbiote.azurewebsites.net`
  (`localhost:7071` under `func start`).
- Azure Container Apps sets `CONTAINER_APP_NAME` and `CONTAINER_APP_ENV_DNS_SUFFIX`; the app's
  public name is `<name>.<suffix>`. It also sets `CONTAINER_APP_HOSTNAME`, the name of the
  running revision, which is accepted too.

Custom domains are not in the environment: they go in SYMBIOTE_ALLOWED_HOSTS. Whether others can
reach the server at all (`exposed`) follows from the bind address and these names.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping

# A DNS name (labels of letters, digits and hyphens) or an IPv4 address; nothing else passes.
_HOSTNAME = re.compile(r"^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$")


def is_loopback(host: str) -> bool:
    """A loopback address (127.0.0.0/8, ::1, also IPv4-mapped) or the name `localhost`.

    Decided by parsing the address, never by a prefix of the name: `127.0.0.1.nip.io` is a public
    name that anyone can point anywhere.
    """
    name = host.strip().lower()
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    if name == "localhost":
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


def exposed(host: str, platform_hosts: tuple[str, ...], behind_functions_host: bool) -> bool:
    """True when others can reach the server: a non-loopback bind, or the Functions host on a public name."""
    if not is_loopback(host):
        return True
    return behind_functions_host and any(not is_loopback(name) for name in platform_hosts)


def normalize_host(value: str) -> str | None:
    """`https://Name.Example.com:443/path` -> `name.example.com`; None when it is not a host name."""
    host = value.strip().lower()
    if "://" in host:
        host = host.split("://", 1)[1]
    host = host.split("/", 1)[0].split("?", 1)[0]
    if host.startswith("["):  # IPv6 literals are never a platform's public name
        return None
    host = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    host = host.rstrip(".")
    return host if _HOSTNAME.match(host) else None


def platform_hosts(env: Mapping[str, str]) -> tuple[str, ...]:
    """Every public host name the platform's environment variables give, de-duplicated, in order."""
    candidates: list[str] = []
    for website in env.get("WEBSITE_HOSTNAME", "").split(","):
        candidates.append(website)
    app = env.get("CONTAINER_APP_NAME", "").strip()
    suffix = env.get("CONTAINER_APP_ENV_DNS_SUFFIX", "").strip().strip(".")
    if app and suffix:
        candidates.append(f"{app}.{suffix}")
    candidates.append(env.get("CONTAINER_APP_HOSTNAME", ""))
    names = (normalize_host(candidate) for candidate in candidates if candidate.strip())
    return tuple(dict.fromkeys(name for name in names if name))
