"""The console's statistics page (what `memory_stats` and health report) and the conversation
history view (one conversation's turns, or a search across all of them)."""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from symbiote.console.rendering import page, problem
from symbiote.errors import InvalidInputError, SymbioteError

MAX_TURNS_SHOWN = 500
HISTORY_HITS = 20


async def stats_page(request: Request) -> Response:
    engine = request.app.state.console_engine
    try:
        stats, count, links = await asyncio.gather(engine.stats(), engine.count(), engine.links.count())
    except SymbioteError as exc:
        return page(
            request, "stats.html", stats=None, status_info=engine.status(), count=None, links=None, error=str(exc)
        )
    return page(request, "stats.html", stats=stats, status_info=engine.status(), count=count, links=links, error="")


async def history_page(request: Request) -> Response:
    history = request.app.state.console_history
    reader = request.app.state.console_turns
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
