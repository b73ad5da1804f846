"""Which authentication mode applies, and the configurations that must not start.

- `none` only where nobody else can reach the server: a loopback bind (127.0.0.1, localhost, ::1),
  and not behind the Functions host on a public name. Anywhere else the server refuses to start
  unauthenticated unless SYMBIOTE_ALLOW_UNAUTHENTICATED=1 forces it (and then warns loudly).
- `oauth` (the default anywhere else): Symbiote is its own OAuth 2.1 authorization server for its
  single owner, and also accepts API keys as bearer tokens.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Mapping
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from symbiote.config import Settings

log = logging.getLogger("symbiote.auth")

LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})
MIN_OWNER_SECRET_LENGTH = 16
GENERATE_HINT = "generate one with: python -c \"import secrets; print(secrets.token_urlsafe(32))\""


def is_loopback(host: str) -> bool:
    host = host.strip().lower()
    return host in LOOPBACK_NAMES or host.startswith("127.")


def exposed(host: str, platform_hosts: tuple[str, ...], behind_functions_host: bool) -> bool:
    """True when others can reach the server: a non-loopback bind, or the Functions host on a public name."""
    if not is_loopback(host):
        return True
    return behind_functions_host and any(not is_loopback(name) for name in platform_hosts)


def resolve_mode(settings: "Settings") -> str:
    """`none` or `oauth` for these settings (SYMBIOTE_AUTH, or automatic from where it listens)."""
    if settings.auth_mode:
        return settings.auth_mode
    return "oauth" if exposed(settings.host, settings.platform_hosts, settings.behind_functions_host) else "none"


def chatgpt_tools_enabled(settings: "Settings") -> bool:
    """ChatGPT's search/fetch: on wherever ChatGPT can reach the server (a public name or OAuth)."""
    if settings.chatgpt_tools != "auto":
        return settings.chatgpt_tools == "on"
    public = bool(settings.public_url or settings.allowed_hosts or settings.platform_hosts)
    return public or resolve_mode(settings) == "oauth"


def public_url_problem(url: str) -> str | None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"SYMBIOTE_PUBLIC_URL={url!r} must look like https://memory.example.com"
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        return f"SYMBIOTE_PUBLIC_URL={url!r} must be the origin only (no path, query or fragment)"
    if parts.scheme != "https" and not is_loopback(parts.hostname):
        return f"SYMBIOTE_PUBLIC_URL={url!r} must use https (OAuth requires it anywhere but loopback)"
    return None


def auth_problems(*, host: str, env: Mapping[str, str], **values: Any) -> list[str]:
    """Configuration mistakes in the auth settings (called by Settings.from_env)."""
    from symbiote.auth.owner import OwnerSecretError, parse_secret_hash
    from symbiote.platform_hosts import platform_hosts

    problems: list[str] = []
    secret, secret_hash = values["owner_secret"], values["owner_secret_hash"]
    if secret and secret_hash:
        problems.append("set SYMBIOTE_OWNER_SECRET or SYMBIOTE_OWNER_SECRET_HASH, not both")
    if secret and len(secret) < MIN_OWNER_SECRET_LENGTH:
        problems.append(
            f"SYMBIOTE_OWNER_SECRET is too short ({len(secret)} characters; at least "
            f"{MIN_OWNER_SECRET_LENGTH}): {GENERATE_HINT}"
        )
    if secret_hash:
        try:
            parse_secret_hash(secret_hash)
        except OwnerSecretError as exc:
            problems.append(f"SYMBIOTE_OWNER_SECRET_HASH: {exc}")
    if values["public_url"]:
        problem = public_url_problem(values["public_url"])
        if problem:
            problems.append(problem)
    mode = values["auth_mode"]
    public = exposed(host, platform_hosts(env), values["behind_functions_host"])
    if mode == "none" and public and not values["allow_unauthenticated"]:
        problems.append(
            "SYMBIOTE_AUTH=none on a public interface would let anyone who finds the URL read and change "
            "every memory. Use SYMBIOTE_AUTH=oauth (the default here) with SYMBIOTE_OWNER_SECRET, or force it "
            "with SYMBIOTE_ALLOW_UNAUTHENTICATED=1 if something in front of Symbiote already authenticates"
        )
    return problems


class AuthRefused(Exception):
    """The settings would serve memories unauthenticated on a public interface."""


def enforce(settings: "Settings") -> str:
    """The effective mode; refuse an unauthenticated public server (after `serve --host` overrides), warn."""
    mode = resolve_mode(settings)
    public = exposed(settings.host, settings.platform_hosts, settings.behind_functions_host)
    if mode == "none" and public:
        if not settings.allow_unauthenticated:
            raise AuthRefused(
                f"refusing to serve without authentication on {settings.host}: anyone who finds the URL could "
                "read every memory. Set SYMBIOTE_AUTH=oauth and SYMBIOTE_OWNER_SECRET (see docs/auth.md), or "
                "SYMBIOTE_AUTH=none with SYMBIOTE_ALLOW_UNAUTHENTICATED=1 if a proxy in front already authenticates."
            )
        banner = "!" * 78
        log.warning(
            "\n%s\n!! AUTHENTICATION IS OFF on a public interface (%s), forced by SYMBIOTE_ALLOW_UNAUTHENTICATED.\n"
            "!! Anyone who can reach this server can read, change and delete every memory.\n%s",
            banner,
            settings.host,
            banner,
        )
    if mode == "oauth" and not (settings.owner_secret or settings.owner_secret_hash):
        log.warning(
            "SYMBIOTE_OWNER_SECRET is not set: OAuth sign-in (Claude, ChatGPT connectors) is disabled and only "
            "API keys (`symbiote keys create`) are accepted. %s",
            GENERATE_HINT,
        )
    return mode
