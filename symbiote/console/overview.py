"""The console's statistics page (what the owner wants to know about their memories, with the
store's internals folded away) and the conversation history (one conversation's turns, a search
across all of them on the memories' 0-100 scale, and deleting one conversation's turns)."""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from symbiote.console.forms import checked_form, text
from symbiote.console.rendering import page, problem
from symbiote.console.state import console_state
from symbiote.errors import InvalidInputError, SymbioteError
from symbiote.memory import RELEVANCE_CUTOFF, OwnerStats, validation
from symbiote.storage import MemoryFilter

MAX_TURNS_SHOWN = 500
HISTORY_HITS = 20
NEWEST_SHOWN = 5
TAGS_SHOWN = 12


async def _owner_statistics(request: Request) -> OwnerStats:
    """The owner's record (additions per week, by client and conversation, newest, most edited,
    duplicates the server linked)."""
    return await console_state(request).engine.owner_stats()


async def stats_page(request: Request) -> Response:
    state = console_state(request)
    engine = state.engine
    reader = state.turns
    context: dict[str, Any] = {"status_info": engine.status(), "error": "", "cutoff": RELEVANCE_CUTOFF}
    try:
        stats, count, newest, tags, owner, links = await asyncio.gather(
            engine.stats(),
            engine.count(),
            state.bulk.browse(MemoryFilter(), 0, NEWEST_SHOWN),
            engine.tags(),
            _owner_statistics(request),
            engine.links.count(),
        )
        aside = await state.bulk.set_aside()  # read once per store opened
        conversations = await reader.conversations() if reader is not None else None
    except SymbioteError as exc:
        context.update(
            stats=None,
            count=None,
            newest=[],
            tags={},
            owner=None,
            conversations=None,
            links=None,
            aside=[],
            error=str(exc),
        )
        return page(request, "stats.html", **context)
    context.update(
        stats=stats,
        count=count,
        newest=newest.memories,
        tags=dict(list(tags.items())[:TAGS_SHOWN]),
        tag_total=len(tags),
        owner=owner,
        conversations=conversations,
        links=links,
        aside=aside,
    )
    return page(request, "stats.html", **context)


async def history_page(request: Request) -> Response:
    state = console_state(request)
    history, reader = state.history, state.turns
    conversation = request.query_params.get("conversation", "").strip()[:200]
    query = request.query_params.get("q", "").strip()[:1000]
    context: dict[str, Any] = {
        "conversation": conversation,
        "query": query,
        "turns": None,
        "total": 0,
        "hits": None,
        "conversations": [],
        "message": "",
        "available": history is not None,
        "cutoff": RELEVANCE_CUTOFF,
        "deleted": request.query_params.get("deleted", "")[:12],
        "deleted_conversation": request.query_params.get("gone", "")[:200],
    }
    if history is None:
        return page(request, "history.html", **context)
    try:
        if conversation:
            found = await history.get(conversation, MAX_TURNS_SHOWN)
            context.update(turns=found.turns, total=found.total_turns)
        elif query:
            context["hits"] = await history.search(query, None, HISTORY_HITS)
        if reader is not None and not conversation:
            context["conversations"] = await reader.conversations()
    except InvalidInputError as exc:
        context["message"] = str(exc)
    except SymbioteError as exc:
        return problem(request, str(exc), status=503)
    return page(request, "history.html", **context)


async def delete_history(request: Request) -> Response:
    """One conversation's turns deleted: first a confirmation page saying what goes and what stays,
    then (confirmed) the deletion. Memories stored from that conversation are kept."""
    history = console_state(request).history
    form = await checked_form(request)
    if form is None:
        return problem(request, "This form has expired; reload the page and try again.", status=403)
    if history is None:
        return problem(request, "This server keeps no conversation history.", status=404)
    try:
        conversation = validation.conversation_id(text(form, "conversation").strip())
        if form.get("confirm") != "yes":
            found = await history.get(conversation, 1)
            return page(request, "confirm_history.html", conversation=conversation, total=found.total_turns)
        removed = await history.delete_conversation(conversation)
    except InvalidInputError as exc:
        return problem(request, str(exc), status=400)
    except SymbioteError as exc:
        return problem(request, str(exc), status=503)
    root = request.scope.get("root_path", "")
    return RedirectResponse(f"{root}/history?{urlencode({'deleted': removed, 'gone': conversation})}", status_code=303)
