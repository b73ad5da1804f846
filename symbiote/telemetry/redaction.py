"""The last guard between a log line and a reader: tokens, secrets and memory text are masked.

Symbiote's own lines never carry them, but libraries at DEBUG do: the MCP SDK dumps the messages
it sends (a search result holds memories), uvicorn's access log prints query strings (the OAuth
`code`), legacy SSE session ids ride in message paths, a traceback may quote an argument. The filter sits on the
handlers, so it sees every record that is written, whichever logger it came from. It works on
shapes, not on known values: `key=value` pairs, JSON and Python mappings with a sensitive key,
`Bearer` credentials and Symbiote's own token prefixes.

It also escapes control characters (`escape_controls`) in every value interpolated into a line:
a `client_id` carrying `%0A` would otherwise start a line of its own that reads like a real one.
Only the values are escaped, never a message's own format, so tracebacks and deliberate line
breaks stay as they are.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any

MASK = "[redacted]"
# Keys whose values are secrets, and keys whose values are (or hold) memory or conversation text.
SECRET_KEYS = (
    "access_token",
    "refresh_token",
    "id_token",
    "token",
    "code",
    "code_verifier",
    "client_secret",
    "owner_secret",
    "secret",
    "password",
    "api_key",
    "apikey",
    "authorization",
    "ticket",
    "session_id",
    "assertion",
    "connection_string",
)
CONTENT_KEYS = ("content", "contents", "query", "text", "arguments", "messages", "prompt", "context", "snippet")
_KEYS = "|".join(sorted(SECRET_KEYS + CONTENT_KEYS, key=len, reverse=True))
_QUOTED = r"\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'"

# Each rule: the substrings (in the lowered text) without which it cannot match, so that the usual
# line (an access log entry) costs a few substring tests instead of five regular expressions.
_RULES: tuple[tuple[tuple[str, ...], re.Pattern[str], str], ...] = (
    # Authorization: Bearer <token> (headers, reprs of ASGI scopes)
    (("bearer", "basic"), re.compile(r"(?i)\b(bearer|basic)\s+[^\s\"',;)\]]+"), rf"\1 {MASK}"),
    # Symbiote's own credentials, wherever they appear (sym_key_..., sym_at_..., sym_rt_..., sym_code_...).
    (("sym_",), re.compile(r"\b(sym_(?:key|at|rt|code))_[A-Za-z0-9_\-]{8,}"), rf"\1_{MASK}"),
    # A legacy SSE session's id in its message path: the first 8 characters name it (as the sessions log does).
    (("/messages/",), re.compile(r"(/messages/)([0-9a-fA-F]{8})[0-9a-fA-F-]{8,}"), rf"\1\2…{MASK}"),
    # "key": value and 'key': value (JSON, Python dicts); nested objects are left to their own keys.
    (
        ('":', "':", '" :', "' :"),
        re.compile(rf"(?i)([\"'])({_KEYS})\1(\s*:\s*)({_QUOTED}|[^,}}\]\s{{\[]+)"),
        rf'\1\2\1\3"{MASK}"',
    ),
    # key=value (query strings, form bodies, keyword reprs such as content='...').
    (("=",), re.compile(rf"(?i)(?<![\w.])({_KEYS})=({_QUOTED}|[^&\s,;)\"'{{\[]+)"), rf"\1={MASK}"),
)


# A whole JSON-RPC message (SSE chunks, the SDK's message dumps): its payload is replaced by a summary,
# since results quote memories inside strings escaped once or twice, beyond what a pattern can follow.
_PAYLOAD_START = re.compile(r"[{(\[]|\bb['\"]")
_METHOD = re.compile(r"""method\\*["']?\s*[:=]\s*\\*["']([\w/]+)""")


def _summary(text: str) -> str:
    start = _PAYLOAD_START.search(text)
    head = text[: start.start()] if start else ""
    method = _METHOD.search(text)
    about = f"{method.group(1)}, " if method else ""
    return f"{head}[MCP message: {about}{len(text)} characters, {MASK}]"


def redact(text: str) -> str:
    """`text` with every sensitive value masked."""
    lowered = text.lower()
    if "jsonrpc" in lowered:
        return _summary(text)
    for clues, pattern, replacement in _RULES:
        if any(clue in lowered for clue in clues):
            text = pattern.sub(replacement, text)
    return text


# C0 and C1 controls, DEL, and the Unicode line and paragraph separators some log viewers break on.
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def escape_controls(text: str) -> str:
    """`text` with each control character written as its escape (a newline as `\\n`)."""
    return _CONTROLS.sub(lambda found: found.group().encode("unicode_escape").decode("ascii"), text)


def _escaped(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float)):
        return value
    text = value if isinstance(value, str) else str(value)
    return escape_controls(text) if _CONTROLS.search(text) else value


def escape_arguments(record: logging.LogRecord) -> None:
    """Escape control characters in what `record` interpolates into its message (the request data)."""
    args = record.args
    if isinstance(args, Mapping):
        record.args = {key: _escaped(value) for key, value in args.items()}
    elif isinstance(args, tuple):
        record.args = tuple(_escaped(value) for value in args)


class RedactingFilter(logging.Filter):
    """Masks the message, the traceback and the stack of every record its handler writes, and
    escapes control characters in the values the message interpolates."""

    _traceback = logging.Formatter()

    def filter(self, record: logging.LogRecord) -> bool:
        escape_arguments(record)
        try:
            message = record.getMessage()
        except (TypeError, ValueError):  # a malformed call: the handler reports it with logging's own error
            return True
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = self._traceback.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


def protect(*loggers: logging.Logger) -> None:
    """Put the filter on every handler of `loggers` (the root logger if none) that lacks it."""
    for logger in loggers or (logging.getLogger(),):
        for handler in logger.handlers:
            if not any(isinstance(existing, RedactingFilter) for existing in handler.filters):
                handler.addFilter(RedactingFilter())
