"""The console's review of the links between memories about the same thing (`symbiote.memory.links`),
made by the server's rule, the assistant or the owner: newest first, each saying who made it, with
keep both, merge and undo, one click each; and the owner's own link, from a memory's page."""

from __future__ import annotations

from collections.abc import Awaitable

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from symbiote.console.forms import checked_form, text
from symbiote.console.rendering import page, problem
from symbiote.console.state import console_state
from symbiote.errors import InvalidInputError, MemoryNotFoundError, SymbioteError
from symbiote.memory import OWNER

DONE = {
    "keep": "Kept both, linked.",
    "merge": "Merged: the replaced memory was deleted.",
    "undo": "Link undone.",
    "link": "Linked: the newer memory is shown first.",
}


async def links_page(request: Request) -> Response:
    try:
        links = await console_state(request).engine.links.links()
    except SymbioteError as exc:
        return problem(request, str(exc), status=503)
    done = DONE.get(request.query_params.get("done", ""), "")
    return page(request, "links.html", links=links, done=done)


async def review_link(request: Request) -> Response:
    """One of keep, merge or undo on the link of the replaced memory in the path."""
    form = await checked_form(request)
    if form is None:
        return problem(request, "This form has expired; reload the page and try again.", status=403)
    action = request.path_params["action"]
    links = console_state(request).engine.links
    operations = {"keep": links.keep, "merge": links.merge, "undo": links.undo}
    if action not in operations:
        return problem(request, "Unknown action: keep, merge or undo.", status=404)
    return await _done(request, operations[action](request.path_params["memory_id"]), action)


async def link_memory(request: Request) -> Response:
    """The owner's link: the memory in the path replaces the one named in the form."""
    form = await checked_form(request)
    if form is None:
        return problem(request, "This form has expired; reload the page and try again.", status=403)
    links = console_state(request).engine.links
    older = text(form, "older_id").strip()
    linking = links.link(request.path_params["memory_id"], older, text(form, "kind", "update"), OWNER)
    return await _done(request, linking, "link")


async def _done(request: Request, change: Awaitable[object], action: str) -> Response:
    """Run a change of links; back to the review, saying what was done, or a page saying why not."""
    try:
        await change
    except MemoryNotFoundError as exc:
        return problem(request, str(exc), status=404)
    except InvalidInputError as exc:
        return problem(request, str(exc), status=400)
    except SymbioteError as exc:
        return problem(request, str(exc), status=503)
    return RedirectResponse(f"{request.scope.get('root_path', '')}/links?done={action}", status_code=303)
