"""Which authentication mode applies, and the configurations that must not start.

- `none` only where nobody else can reach the server: a loopback bind (127.0.0.1, localhost, ::1),
  and not behind the Functions host on a public name. Anywhere else the server refuses to start
  unauthenticated unless SYMBIOTE_ALLOW_UNAUTHENTICATED=1 forces it (and then warns loudly).
- `oauth` (the default anywhere else): Symbiote is its own OAuth 2.1 authorization server for its
  single owner, and also accepts API keys as bearer tokens.

Mistakes in the auth settings themselves are refused when they are read (`symbiote.auth_settings`);
`enforce` checks again once `serve --host` may have moved the server onto a public interface.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from symbiote.auth_settings import GENERATE_HINT
from symbiote.errors import SymbioteError
from symbiote.platform_hosts import exposed

if TYPE_CHECKING:
    from symbiote.config import Settings

log = logging.getLogger("symbiote.auth")


def resolve_mode(settings: Settings) -> str:
    """`none` or `oauth` for these settings (SYMBIOTE_AUTH, or automatic from where it listens)."""
    if settings.auth_mode:
        return settings.auth_mode
    return "oauth" if exposed(settings.host, settings.platform_hosts, settings.behind_functions_host) else "none"


def chatgpt_tools_enabled(settings: Settings) -> bool:
    """ChatGPT's search/fetch: on wherever ChatGPT can reach the server (a public name or OAuth)."""
    if settings.chatgpt_tools != "auto":
        return settings.chatgpt_tools == "on"
    public = bool(settings.public_url or settings.allowed_hosts or settings.platform_hosts)
    return public or resolve_mode(settings) == "oauth"


class AuthRefused(SymbioteError):
    """The settings would serve memories unauthenticated on a public interface."""


def enforce(settings: Settings) -> str:
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
