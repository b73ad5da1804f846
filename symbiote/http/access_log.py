"""The access log without credentials: query values that may carry one are replaced before logging.

Clients put credentials in query strings even where they are refused (`?access_token=`, an API
key in `?key=`), and OAuth puts one-time secrets there by design (`/oauth/consent?ticket=`, a
redirect's `?code=`). uvicorn logs each request line with its query string, so a filter on its
access logger rewrites the line: any parameter whose name contains one of CREDENTIAL_WORDS keeps
its name and loses its value. The console's query strings carry what the owner searched for (a
search, a tag, a conversation): on its pages only the parameters in CONSOLE_PLAIN, which hold no
memory text, keep their values.
"""

from __future__ import annotations

import logging
from urllib.parse import parse_qsl, urlencode

CREDENTIAL_WORDS = ("ticket", "code", "token", "key", "secret", "password", "verifier", "assertion", "session")
REDACTED = "[redacted]"
CONSOLE_PLAIN = ("page", "type", "from", "to", "saved", "deleted", "dry_run", "replace", "history", "vectors")


def redact_target(target: str) -> str:
    """`/path?ticket=abc&x=1` -> `/path?ticket=[redacted]&x=1`."""
    path, mark, query = target.partition("?")
    if not mark:
        return target
    pairs = parse_qsl(query, keep_blank_values=True)
    if not pairs and query:
        return f"{path}?{REDACTED}"  # not key=value pairs: nothing in it can be shown safely
    console = "console" in path.split("/")
    cleaned = [_clean(name, value, console) for name, value in pairs]
    return f"{path}?{urlencode(cleaned, safe='[]')}"


def _clean(name: str, value: str, console: bool) -> tuple[str, str]:
    if name.startswith("sym_") or len(name) > 40:  # a credential sent as a bare parameter
        return REDACTED, ""
    if console and name not in CONSOLE_PLAIN:  # the owner's search terms, tags, conversations
        return name, REDACTED
    return name, REDACTED if any(word in name.lower() for word in CREDENTIAL_WORDS) else value


class RedactCredentials(logging.Filter):
    """For uvicorn's access logger, whose records carry (client, method, target, version, status)."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) >= 3 and isinstance(args[2], str) and "?" in args[2]:
            record.args = (*args[:2], redact_target(args[2]), *args[3:])
        return True


def install() -> None:
    """Attach the filter to uvicorn's access logger (idempotent)."""
    access = logging.getLogger("uvicorn.access")
    if not any(isinstance(f, RedactCredentials) for f in access.filters):
        access.addFilter(RedactCredentials())
