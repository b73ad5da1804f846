"""The console's deleting and undoing: the confirmation, the delete, its undo, and the trash page.

A delete moves memories to the trash (`symbiote.memory.trash`), where the owner can restore them
for TRASH_DAYS. Every change is a POST answered by a redirect to a page got with GET (the
confirmation is a GET too), so Back never lands on a form to resubmit; and the search or filter
the owner came from rides along (`back`) to the confirmation, its Cancel and the page after.
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import parse_qsl, urlencode

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from symbiote.console.forms import Fields, checked_form, text, texts
from symbiote.console.memories import PAGE_SIZE, Filters
from symbiote.console.rendering import page, problem
from symbiote.console.state import console_state
from symbiote.errors import InvalidInputError, SymbioteError
from symbiote.memory import OWNER, TRASH_DAYS, expires_us, now_us, validation

MAX_SELECTION = 100  # ids ticked one by one; "all matching" sends the filters instead
ALL_MATCHING = 100_000  # the most one "select all matching" deletes
SHOWN = 20  # memories the confirmation lists
BACK_KEYS = ("q", "tag", "type", "from", "to", "page", "weaker")


def back_of(values: Fields) -> str:
    """The list's query string the owner came from, rebuilt from its known keys only."""
    pairs = parse_qsl(text(values, "back")[:3000], keep_blank_values=False)
    return urlencode([(key, value[:1000]) for key, value in pairs if key in BACK_KEYS])


def _list_url(request: Request, back: str, extra: Sequence[tuple[str, str | int]] = ()) -> str:
    """The list the owner came from (`back`), with what the page after a change says (`extra`)."""
    query = "&".join(part for part in (back, urlencode(extra)) if part)
    return f"{request.scope.get('root_path', '')}/" + (f"?{query}" if query else "")


def _filters(back: str) -> Filters:
    """The filters of the list the owner came from."""
    return Filters.read(dict(parse_qsl(back)))


async def _selection(request: Request, values: Fields, back: str) -> tuple[list[str], int]:
    """The ids chosen, and how many: ticked ones, or (`all`) every memory the list's filters match."""
    if values.get("all") == "matching":
        if _filters(back).q:  # a search shows all it found on one page: its boxes are the selection
            raise InvalidInputError("All matching applies to the list and its filters, not to a search.")
        where = _filters(back).where()
        ids, total = await console_state(request).bulk.matching_ids(where, ALL_MATCHING)
        return ids, total
    ids = list(dict.fromkeys(texts(values, "ids")))[:MAX_SELECTION]
    return (validation.memory_ids(ids) if ids else []), len(ids)


async def confirm_delete(request: Request) -> Response:
    """GET: what would be deleted, with the button that does it and a Cancel back to the list."""
    params = request.query_params
    back = back_of(params)
    try:
        ids, total = await _selection(request, params, back)
        if not ids:
            return problem(request, "Select at least one memory to delete.", status=400)
        found = await console_state(request).bulk.fetch(ids[:SHOWN])
    except InvalidInputError as exc:
        return problem(request, str(exc), status=400)
    except SymbioteError as exc:
        return problem(request, str(exc), status=503)
    shown = [found[mid] for mid in ids[:SHOWN] if mid in found]
    return page(
        request,
        "confirm_delete.html",
        memories=shown,
        ids=ids if params.get("all") != "matching" else [],
        every=params.get("all") == "matching",
        total=total if params.get("all") == "matching" else len(shown),
        back=back,
        cancel=_list_url(request, back),
        days=TRASH_DAYS,
    )


async def delete_memories(request: Request) -> Response:
    """POST: the confirmed delete (to the trash), then the list the owner came from, with an undo."""
    form = await checked_form(request)
    if form is None:
        return problem(request, "This form has expired; reload the page and try again.", status=403)
    back = back_of(form)
    if form.get("confirm") != "yes":  # the list's form posted straight here: confirm first, by GET
        query = [("back", back)] + [("ids", v) for v in texts(form, "ids")][:MAX_SELECTION]
        if form.get("all") == "matching":
            query.append(("all", "matching"))
        return RedirectResponse(f"{request.scope.get('root_path', '')}/delete?{urlencode(query)}", status_code=303)
    try:
        ids, _total = await _selection(request, form, back)
        if not ids:
            return problem(request, "Select at least one memory to delete.", status=400)
        at = now_us()
        removed = await console_state(request).engine.trash.move(ids, OWNER, at)
    except InvalidInputError as exc:
        return problem(request, str(exc), status=400)
    except SymbioteError as exc:
        return problem(request, str(exc), status=503)
    said = [("deleted", len(removed))] + ([("undo", at)] if removed else [])
    return RedirectResponse(_list_url(request, back, said), status_code=303)


async def trash_page(request: Request) -> Response:
    number = request.query_params.get("page", "1")
    current = max(1, int(number)) if number.isascii() and number.isdigit() and len(number) <= 6 else 1
    trash = console_state(request).engine.trash
    try:
        listed = await trash.page((current - 1) * PAGE_SIZE, PAGE_SIZE)
        pages = max(1, -(-listed.total // PAGE_SIZE))
        if current > pages:
            current = pages
            listed = await trash.page((current - 1) * PAGE_SIZE, PAGE_SIZE)
    except SymbioteError as exc:
        return problem(request, str(exc), status=503)
    params = request.query_params
    return page(
        request,
        "trash.html",
        items=listed.items,
        total=listed.total,
        days=listed.days,
        current=current,
        pages=pages,
        expires=expires_us,
        restored=params.get("restored", ""),
        purged=params.get("purged", ""),
        refused=params.getlist("refused"),
        per_instance=console_state(request).trash_per_instance,
    )


async def restore_memories(request: Request) -> Response:
    """POST: restore the ticked memories, or (`undo`) one whole deletion; back where the owner was."""
    form = await checked_form(request)
    if form is None:
        return problem(request, "This form has expired; reload the page and try again.", status=403)
    trash = console_state(request).engine.trash
    undo = text(form, "undo")
    try:
        if undo:
            if not (undo.isascii() and undo.isdigit()) or len(undo) > 20:
                return problem(request, "That undo link is not one the console made.", status=400)
            ids = await trash.deletion(int(undo))
        else:
            picked = list(dict.fromkeys(texts(form, "ids")))[:MAX_SELECTION]
            ids = validation.memory_ids(picked) if picked else []
        if not ids:
            return problem(request, "Nothing to restore: the trash holds none of these memories any more.", status=400)
        report = await trash.restore(ids)
    except InvalidInputError as exc:
        return problem(request, str(exc), status=400)
    except SymbioteError as exc:
        return problem(request, str(exc), status=503)
    refused = [f"{mid}: {why}" for mid, why in report.clashes]
    said = [("restored", len(report.restored))] + [("refused", line) for line in refused]
    if undo:
        return RedirectResponse(_list_url(request, back_of(form), said), status_code=303)
    query = urlencode(said)
    return RedirectResponse(f"{request.scope.get('root_path', '')}/trash?{query}", status_code=303)


async def confirm_empty(request: Request) -> Response:
    try:
        listed = await console_state(request).engine.trash.page(0, 1)
    except SymbioteError as exc:
        return problem(request, str(exc), status=503)
    return page(request, "confirm_empty.html", total=listed.total)


async def empty_trash(request: Request) -> Response:
    form = await checked_form(request)
    if form is None:
        return problem(request, "This form has expired; reload the page and try again.", status=403)
    if form.get("confirm") != "yes":
        return RedirectResponse(f"{request.scope.get('root_path', '')}/trash/empty", status_code=303)
    try:
        purged = await console_state(request).engine.trash.purge(None)
    except SymbioteError as exc:
        return problem(request, str(exc), status=503)
    return RedirectResponse(f"{request.scope.get('root_path', '')}/trash?purged={len(purged)}", status_code=303)
