"""What a JSON-RPC body must be before either MCP wire reads it: Unicode text throughout, and an id
that is a string or an integer.

The two wires parse alike only here. The 2026-07-28 transport decodes a body with the standard
library's `json`, which turns a `\\ud800` escape into a lone surrogate (not text: Chroma and
SQLite refuse it later); the 2025-11-25 transport and the legacy `/messages` decode with pydantic's
parser, which refuses the whole body. And the legacy pair takes an id of `true`, `1.5` or `null`
for a notification (202, no answer), where JSON-RPC and MCP allow only a string or an integer. So
every POST to `/mcp` and `/messages/` passes this check first, answered the same on both: HTTP 400
with -32602 naming the field that is not text, or -32600 for an id that cannot be one.

It costs a regular-expression scan of the body; the body is decoded only when the scan finds an
escape of a surrogate or an `"id"` that is not a plain string or integer (anywhere: the decoded
body decides).
"""

from __future__ import annotations

import json
import re
from typing import Any

from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from symbiote.storage import text

INVALID_REQUEST = -32600
INVALID_PARAMS = -32602

_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_ODD_ID = re.compile(rb'"id"\s*:\s*(?:[^-0-9"\s]|-[^0-9]|-?[0-9]+[.eE])')


class CheckedEnvelope:
    """The check around one MCP endpoint (ASGI): the body read (the body cap read it already), checked,
    and passed on unchanged, or answered with the JSON-RPC error."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        messages: list[Message] = []
        body = bytearray()
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        refusal = refused(bytes(body))
        if refusal is not None:
            await refusal(scope, receive, send)
            return

        async def replay() -> Message:
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)


def refused(body: bytes) -> Response | None:
    """The JSON-RPC error for a body that holds text that is not Unicode or an id that cannot be
    one; None for every other body (a body that is not JSON is the wire's to answer)."""
    if _SURROGATE_ESCAPE.search(body) is None and _ODD_ID.search(body) is None:
        return None
    try:
        decoded = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(decoded, dict):
        return None
    request_id = decoded.get("id")
    good_id = isinstance(request_id, str | int) and not isinstance(request_id, bool)
    if "id" in decoded and not good_id:
        return _error(None, INVALID_REQUEST, "Invalid request: id must be a string or an integer")
    where = text.first_not_text(decoded)
    if where is None:
        return None
    code = INVALID_PARAMS if where.startswith("params") else INVALID_REQUEST
    shown = request_id if good_id and text.not_text_at(str(request_id)) is None else None
    return _error(
        shown,
        code,
        f"Invalid {'params' if code == INVALID_PARAMS else 'request'}: {where} is not valid Unicode text "
        "(it holds a lone surrogate, such as the escape \\ud800 alone); send the text as UTF-8",
    )


def _error(request_id: Any, code: int, message: str) -> Response:
    body = {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
    return Response(json.dumps(body, separators=(",", ":")), status_code=400, media_type="application/json")
