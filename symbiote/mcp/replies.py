"""What a tool's reply puts on the wire: its fields that say something, once as structured content and
once as compact JSON text, because the assistant pays for every token it reads.

A field that may be left out and says nothing (None, an empty list or mapping, a flag left false) is
left out; the output schema still names it, with its default, so a client that validates finds the
same object. A field with a value that says something (`match: "answer"`) stays, default or not. The SDK's own conversion
would send every field twice, the text indented.
"""

from __future__ import annotations

import json
from typing import Any

from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel


def reply(result: BaseModel) -> CallToolResult:
    """`result` as the tool's reply: its fields that are not empty, as data and as one line of JSON."""
    data = result.model_dump(mode="json", by_alias=True, exclude=_empty(result))
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def _empty(model: BaseModel) -> dict[Any, Any]:
    """Pydantic's `exclude` for `model`: its optional fields that are empty, and theirs in the models it holds."""
    exclude: dict[Any, Any] = {}
    for name, info in type(model).model_fields.items():
        value = getattr(model, name)
        if not info.is_required() and (
            value is None
            or (isinstance(value, list | dict | tuple) and not value)
            or (value is False and info.default is False)
        ):
            exclude[name] = True
        elif isinstance(value, BaseModel):
            if inner := _empty(value):
                exclude[name] = inner
        elif isinstance(value, list):
            items = {
                i: inner for i, item in enumerate(value) if isinstance(item, BaseModel) and (inner := _empty(item))
            }
            if items:
                exclude[name] = items
    return exclude
