"""A pasted list of memories on the console's import page: a preview of what would be stored (and
what is already there), then the store, every memory tagged with the batch's tag, and its undo as
one step (the batch's memories go to the trash, with the list's usual Undo to bring them back)."""

from __future__ import annotations

from urllib.parse import urlencode

from starlette.formparsers import MultiPartException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from symbiote.console.forms import checked_form, text
from symbiote.console.memories import Filters
from symbiote.console.rendering import page, problem
from symbiote.console.state import console_state
from symbiote.console.trash_pages import ALL_MATCHING
from symbiote.errors import InvalidInputError, SymbioteError
from symbiote.memory import OWNER, created_us, now_us, validation
from symbiote.transfer import batch_tag, import_text, pasted_lines

SHOWN = 200  # lines the preview lists (all are counted and stored)


async def import_text_page(request: Request) -> Response:
    """POST: `preview` shows what the paste becomes (nothing stored); `store` stores it. The text
    may be as long as a request's body (a paste over MAX_PASTED_BYTES of text is refused in words)."""
    try:
        form = await checked_form(request, console_state(request).max_body)
    except MultiPartException as exc:
        return problem(request, f"This paste cannot be read ({exc})", status=413)
    if form is None:
        return problem(request, "This form has expired; reload the page and try again.", status=403)
    pasted = text(form, "text")
    tag = " ".join(text(form, "tag").split()) or batch_tag()
    storing = form.get("action") == "store"
    try:
        report = await import_text(console_state(request).bulk, pasted, tag, dry_run=not storing)
    except InvalidInputError as exc:
        return problem(request, str(exc), status=400)
    except SymbioteError as exc:
        return problem(request, str(exc), status=503)
    lines = list(pasted_lines(pasted))
    return page(
        request,
        "import_text.html",
        report=report,
        lines=lines[:SHOWN],
        more=max(0, len(lines) - SHOWN),
        text=pasted,
        tag=tag,
        stored=storing,
    )


async def undo_batch(request: Request) -> Response:
    """POST: every memory this batch added goes to the trash, in one step: tagged with its tag and
    made within its span of times (`from`, `to`), so none stored before under that tag is touched;
    the list then offers its Undo (restore) as after any delete."""
    form = await checked_form(request)
    if form is None:
        return problem(request, "This form has expired; reload the page and try again.", status=403)
    try:
        (tag,) = validation.tags([text(form, "tag")])
        span = _span(text(form, "from"), text(form, "to"))
        ids, _total = await console_state(request).bulk.matching_ids(Filters.read({"tag": tag}).where(), ALL_MATCHING)
        ids = [mid for mid in ids if span[0] <= created_us(mid) <= span[1]]
        at = now_us()
        removed = await console_state(request).engine.trash.move(ids, OWNER, at) if ids else []
    except InvalidInputError as exc:
        return problem(request, str(exc), status=400)
    except SymbioteError as exc:
        return problem(request, str(exc), status=503)
    said = [("deleted", len(removed))] + ([("undo", at)] if removed else [])
    return RedirectResponse(f"{request.scope.get('root_path', '')}/?{urlencode(said)}", status_code=303)


def _span(low: str, high: str) -> tuple[int, int]:
    """The batch's span of creation times, as its page gave it."""
    if not (low.isdigit() and high.isdigit()) or int(low) > int(high):
        raise InvalidInputError("This undo does not say which import it is for; undo it from the list of memories.")
    return int(low), int(high)
