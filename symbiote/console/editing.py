"""The console's writing pages: add a memory by hand, and save a memory's edit form (text, tags,
type, confidence, bookmark).

Both go through the engine the MCP tools use (`store_memory`, `update_memory`): the same checks,
the same duplicate rule, the same re-indexing; a memory the owner adds records "console" as what
stored it, for the statistics.
"""

from __future__ import annotations

import math
from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from symbiote.console.memories import checked_form, split_tags
from symbiote.console.rendering import page, problem
from symbiote.errors import InvalidInputError, MemoryNotFoundError, SymbioteError
from symbiote.memory import CONSOLE  # what stored a memory the owner added here

TYPES = ("preference", "fact", "project", "decision", "personal")  # offered; any other short word is accepted too


def confidence_of(text: str) -> float | None:
    """The form's confidence: blank for none (or unchanged), else a number the engine checks for range."""
    text = text.strip().replace(",", ".")
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        raise InvalidInputError(f"Confidence must be a number from 0 to 1 (got {text[:20]!r}).") from None
    if not math.isfinite(value):
        raise InvalidInputError("Confidence must be a number from 0 to 1.")
    return value


def _values(form: Any) -> dict[str, str]:
    return {
        "content": str(form.get("content", "")),
        "tags": str(form.get("tags", "")),
        "type": str(form.get("type", "")).strip(),
        "confidence": str(form.get("confidence", "")),
        "bookmarked": "on" if form.get("bookmarked") else "",
    }


async def new_memory_page(request: Request) -> Response:
    empty = {"content": "", "tags": "", "type": "", "confidence": "", "bookmarked": ""}
    return page(request, "new_memory.html", values=empty, error="", types=TYPES)


async def add_memory(request: Request) -> Response:
    form = await checked_form(request)
    if form is None:
        return problem(request, "This form has expired; reload the page and try again.", status=403)
    values = _values(form)
    try:
        result = await request.app.state.console_engine.store(
            values["content"],
            split_tags(values["tags"]),
            values["type"] or None,
            confidence_of(values["confidence"]),
            None,
            bool(values["bookmarked"]),
            CONSOLE,
        )
    except InvalidInputError as exc:
        return page(request, "new_memory.html", status=400, values=values, error=f"Not added: {exc}", types=TYPES)
    except SymbioteError as exc:
        return page(request, "new_memory.html", status=503, values=values, error=f"Not added: {exc}", types=TYPES)
    said = "added" if result.status == "stored" else "duplicate"
    root = request.scope.get("root_path", "")
    return RedirectResponse(f"{root}/memories/{result.memory_id}?saved={said}", status_code=303)


async def save_memory(request: Request) -> Response:
    memory_id = request.path_params["memory_id"]
    form = await checked_form(request)
    if form is None:
        return problem(request, "This form has expired; reload the page and try again.", status=403)
    values = _values(form)
    try:
        result = await request.app.state.console_engine.update(
            memory_id,
            content=values["content"],
            tags=split_tags(values["tags"]),
            type=values["type"] or None,  # blank keeps the type
            confidence=confidence_of(values["confidence"]),  # blank keeps the confidence
            bookmarked=bool(values["bookmarked"]) if form.get("has_bookmark") else None,  # the box was on the form
        )
    except MemoryNotFoundError:
        return problem(request, f"No memory has the id {memory_id}.", status=404)
    except InvalidInputError as exc:
        return problem(request, f"Not saved: {exc}", status=400)
    except SymbioteError as exc:
        return problem(request, f"Not saved: {exc}", status=503)
    saved = "reindexed" if result.reembedded else "saved"
    return RedirectResponse(f"{request.scope.get('root_path', '')}/memories/{memory_id}?saved={saved}", status_code=303)
