"""The console's writing pages: add a memory by hand, and save a memory's edit form (text, tags,
type, confidence, bookmark).

Both go through the engine the MCP tools use (`store_memory`, `update_memory`): the same checks,
the same duplicate rule, the same re-indexing; a memory the owner adds records "console" as what
stored it, for the statistics.
"""

from __future__ import annotations

import math

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from symbiote.console.forms import checked_form, text
from symbiote.console.memories import split_tags
from symbiote.console.rendering import page, problem
from symbiote.console.state import console_state
from symbiote.errors import InvalidInputError, MemoryNotFoundError, SymbioteError
from symbiote.memory import CONSOLE, StoreRequest, UpdateRequest  # what stored a memory the owner added here

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


def _values(form: FormData) -> dict[str, str]:
    return {
        "content": text(form, "content"),
        "tags": text(form, "tags"),
        "type": text(form, "type").strip(),
        "confidence": text(form, "confidence"),
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
        result = await console_state(request).engine.store(
            StoreRequest(
                content=values["content"],
                tags=split_tags(values["tags"]),
                type=values["type"] or None,
                confidence=confidence_of(values["confidence"]),
                bookmarked=bool(values["bookmarked"]),
                client=CONSOLE,
            )
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
        result = await console_state(request).engine.update(
            UpdateRequest(
                memory_id,
                content=values["content"],
                tags=split_tags(values["tags"]),
                type=values["type"] or None,  # blank keeps the type
                confidence=confidence_of(values["confidence"]),  # blank keeps the confidence
                bookmarked=bool(values["bookmarked"]) if form.get("has_bookmark") else None,  # the box was on the form
            )
        )
    except MemoryNotFoundError:
        return problem(request, f"No memory has the id {memory_id}.", status=404)
    except InvalidInputError as exc:
        return problem(request, f"Not saved: {exc}", status=400)
    except SymbioteError as exc:
        return problem(request, f"Not saved: {exc}", status=503)
    saved = "reindexed" if result.reembedded else "saved"
    return RedirectResponse(f"{request.scope.get('root_path', '')}/memories/{memory_id}?saved={saved}", status_code=303)
