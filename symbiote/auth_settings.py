"""The authentication settings: read from the environment with the rest of `Settings`, and checked.

They live below `symbiote.auth`, which serves them, so that `symbiote.config` can refuse a bad
owner secret or an unauthenticated public server when the environment is read, in the same
message as every other problem, without depending on the auth layer.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from symbiote.errors import SymbioteError
from symbiote.platform_hosts import exposed, is_loopback, platform_hosts

AUTH_MODES = ("none", "oauth")
CHATGPT_TOOLS = ("on", "off", "auto")
TRUE_WORDS = ("1", "true", "yes", "on")
FALSE_WORDS = ("0", "false", "no", "off")
MIN_OWNER_SECRET_LENGTH = 16
GENERATE_HINT = 'generate one with: python -c "import secrets; print(secrets.token_urlsafe(32))"'
SCRYPT_MAXMEM = 64 * 1024 * 1024  # the most memory one owner-secret check may use
# The defaults of the auth settings, defined here once: `Settings` (symbiote.config) declares its
# fields with them and `read_auth_settings` falls back to them.
CHATGPT_TOOLS_DEFAULT = "auto"
ACCESS_TOKEN_TTL_SECONDS = 3600
REFRESH_TOKEN_TTL_SECONDS = 30 * 86400
REGISTRATIONS_PER_MINUTE = 10  # per address
REGISTRATIONS_PER_HOUR = 100  # in total


class OwnerSecretError(SymbioteError):
    """A malformed SYMBIOTE_OWNER_SECRET_HASH."""


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def parse_secret_hash(text: str) -> tuple[int, int, int, bytes, bytes]:
    """`scrypt$n$r$p$salt$hash` (made by `symbiote owner-secret-hash`) as its parts, or OwnerSecretError."""
    parts = text.split("$")
    if len(parts) != 6 or parts[0] != "scrypt":
        raise OwnerSecretError("expected scrypt$n$r$p$salt$hash (made by `symbiote owner-secret-hash`)")
    try:
        n, r, p = int(parts[1]), int(parts[2]), int(parts[3])
        salt, digest = _unb64(parts[4]), _unb64(parts[5])
    except ValueError:
        raise OwnerSecretError("expected scrypt$n$r$p$salt$hash (made by `symbiote owner-secret-hash`)") from None
    if n < 2**12 or n & (n - 1) or not 1 <= r <= 32 or not 1 <= p <= 16 or len(salt) < 8 or len(digest) != 32:
        raise OwnerSecretError(
            "the scrypt parameters are out of range; make a new hash with `symbiote owner-secret-hash`"
        )
    if 128 * r * n * p > SCRYPT_MAXMEM // 2:
        raise OwnerSecretError(
            "the scrypt cost needs too much memory; make a new hash with `symbiote owner-secret-hash`"
        )
    return n, r, p, salt, digest


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


def read_auth_settings(
    env: Mapping[str, str], problems: list[str], integer: Callable[[str, int, int, int], int], host: str
) -> dict[str, Any]:
    """Authentication: the mode, the owner secret, the public URL, token lifetimes, the auth database,
    who may register a client and how often, Client ID Metadata Documents."""

    def flag(name: str) -> bool | None:
        raw = env.get(name, "").strip().lower()
        if not raw:
            return None
        if raw in TRUE_WORDS:
            return True
        if raw in FALSE_WORDS:
            return False
        problems.append(f"{name}={raw!r} must be 1/true/yes or 0/false/no")
        return None

    mode = env.get("SYMBIOTE_AUTH", "").strip().lower()
    mode = "" if mode in ("", "auto") else mode
    if mode and mode not in AUTH_MODES:
        problems.append(f"SYMBIOTE_AUTH={mode!r} must be one of {', '.join(AUTH_MODES)} (or unset for automatic)")
        mode = ""
    chatgpt = env.get("SYMBIOTE_CHATGPT_TOOLS", "").strip().lower() or CHATGPT_TOOLS_DEFAULT
    chatgpt = {"1": "on", "true": "on", "yes": "on", "0": "off", "false": "off", "no": "off"}.get(chatgpt, chatgpt)
    if chatgpt not in CHATGPT_TOOLS:
        problems.append(f"SYMBIOTE_CHATGPT_TOOLS={chatgpt!r} must be one of {', '.join(CHATGPT_TOOLS)}")
        chatgpt = CHATGPT_TOOLS_DEFAULT
    auth_db = env.get("SYMBIOTE_AUTH_DB", "").strip()
    values: dict[str, Any] = {
        "auth_mode": mode,
        "allow_unauthenticated": bool(flag("SYMBIOTE_ALLOW_UNAUTHENTICATED")),
        "owner_secret": env.get("SYMBIOTE_OWNER_SECRET", "").strip(),
        "owner_secret_hash": env.get("SYMBIOTE_OWNER_SECRET_HASH", "").strip(),
        "public_url": env.get("SYMBIOTE_PUBLIC_URL", "").strip().rstrip("/"),
        "trust_forwarded_headers": flag("SYMBIOTE_TRUST_FORWARDED_HEADERS"),
        "behind_functions_host": bool(env.get("FUNCTIONS_WORKER_RUNTIME", "").strip()),
        "access_token_ttl_seconds": integer("SYMBIOTE_ACCESS_TOKEN_TTL_SECONDS", ACCESS_TOKEN_TTL_SECONDS, 60, 86400),
        "refresh_token_ttl_seconds": integer(
            "SYMBIOTE_REFRESH_TOKEN_TTL_SECONDS", REFRESH_TOKEN_TTL_SECONDS, 3600, 365 * 86400
        ),
        "auth_db_path": Path(auth_db).expanduser() if auth_db else None,
        "chatgpt_tools": chatgpt,
        "open_registration": flag("SYMBIOTE_OPEN_REGISTRATION") is not False,
        "registrations_per_minute": integer("SYMBIOTE_REGISTRATIONS_PER_MINUTE", REGISTRATIONS_PER_MINUTE, 1, 10_000),
        "registrations_per_hour": integer("SYMBIOTE_REGISTRATIONS_PER_HOUR", REGISTRATIONS_PER_HOUR, 1, 1_000_000),
        "client_metadata_documents": flag("SYMBIOTE_CLIENT_METADATA_DOCUMENTS") is not False,
        "metadata_loopback": bool(flag("SYMBIOTE_CIMD_ALLOW_LOOPBACK")),
    }
    problems.extend(auth_problems(host=host, env=env, **values))
    return values
