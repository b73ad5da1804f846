"""The console's memory pages: the list (filtered, paged, newest first), search, one memory with
its edit form. Deleting, with its confirmation and undo, is `symbiote.console.trash_pages`.

Reads and writes go through the same engine as the MCP tools: an edit is `update_memory`
(re-embedded, keyword index updated), a search is the tools' hybrid search with its relevance
scores, so what the owner sees here is what an assistant gets.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import date, timedelta
from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response

from symbiote.console.rendering import fragment, page, problem
from symbiote.console.state import console_state
from symbiote.errors import InvalidInputError, SymbioteError
from symbiote.memory import RELEVANCE_CUTOFF, TRASH_DAYS, SearchRequest, instant_us, is_memory_id, validation
from symbiote.storage import MemoryFilter

PAGE_SIZE = 25
SEARCH_LIMIT = 20
WEAKER_CUTOFF = 0.0  # "show weaker matches": every candidate, best first, so nothing the cut-off hid stays hidden
MAX_TAGS_OFFERED = 500  # the tag picker's suggestions, most used first
MATCHED = {"semantic": "meaning", "keyword": "keyword", "both": "keyword + meaning", "topic": "topic"}


def split_tags(text: str) -> list[str]:
    return [tag.strip() for tag in text.split(",") if tag.strip()]


def _day(text: str, name: str) -> date | None:
    if not text:
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise InvalidInputError(f"{name} must be a date like 2026-01-31.") from None


@dataclass(frozen=True)
class Filters:
    """The list's and the search's filters, as the page's query string carries them."""

    q: str = ""
    tag: str = ""
    type: str = ""
    start: str = ""  # first day, YYYY-MM-DD
    end: str = ""  # last day, included
    page: int = 1
    weaker: bool = False  # this one search shows matches under the default cut-off too

    @classmethod
    def of(cls, request: Request) -> Filters:
        return cls.read(request.query_params)

    @classmethod
    def read(cls, params: Mapping[str, str]) -> Filters:
        """From a query string's parameters (a request's, or the list's the owner came from)."""
        number = params.get("page", "1")
        return cls(
            q=params.get("q", "").strip()[:1000],
            tag=params.get("tag", "").strip()[:500],
            type=params.get("type", "").strip().lower()[:30],
            start=params.get("from", "").strip()[:10],
            end=params.get("to", "").strip()[:10],
            page=max(1, int(number))
            if number.isascii() and number.isdigit() and len(number) <= 6
            else 1,  # past the last: the last
            weaker=params.get("weaker") == "1",
        )

    def bounds(self) -> tuple[str | None, str | None]:
        """ISO times: the start of the first day, the start of the day after the last."""
        first, last = _day(self.start, "From"), _day(self.end, "To")
        after = f"{first.isoformat()}T00:00:00Z" if first else None
        before = f"{(last + timedelta(days=1)).isoformat()}T00:00:00Z" if last and last < date.max else None
        if first and last and first > last:
            raise InvalidInputError("From must not be after To.")
        return after, before

    def where(self) -> MemoryFilter:
        after, before = self.bounds()
        return validation.memory_filter(
            tags=split_tags(self.tag),
            type=self.type or None,
            after_us=instant_us(after) if after else None,
            before_us=instant_us(before) if before else None,
        )

    @property
    def active(self) -> bool:
        """Whether anything narrows the list (a search or a filter)."""
        return bool(self.q or self.tag or self.type or self.start or self.end)

    @property
    def narrowing(self) -> int:
        """How many of the folded filters (tag, type, dates) are set, for the phone's "Filters" control."""
        return sum(1 for value in (self.tag, self.type, self.start, self.end) if value)

    def link(self, **changes: Any) -> str:
        values = {
            "q": self.q,
            "tag": self.tag,
            "type": self.type,
            "from": self.start,
            "to": self.end,
            "page": self.page,
            "weaker": "1" if self.weaker else "",
        }
        values.update(changes)
        if values["page"] == 1:
            del values["page"]
        return urlencode({key: value for key, value in values.items() if value})


async def memories_page(request: Request) -> Response:
    state = console_state(request)
    filters = Filters.of(request)
    context: dict[str, Any] = {
        "filters": filters,
        "matched": MATCHED,
        "deleted": request.query_params.get("deleted"),
        "undo": request.query_params.get("undo", ""),
        "restored": request.query_params.get("restored", ""),
        "refused": request.query_params.getlist("refused"),
        "days": TRASH_DAYS,
        "cutoff": RELEVANCE_CUTOFF,
    }
    try:
        if filters.q:
            after, before = filters.bounds()
            found = await state.engine.search(
                SearchRequest(
                    filters.q,
                    limit=SEARCH_LIMIT,
                    after=after,
                    before=before,
                    tags=split_tags(filters.tag) or None,
                    type=filters.type or None,
                    min_relevance=WEAKER_CUTOFF if filters.weaker else None,
                )
            )
            cutoff = WEAKER_CUTOFF if filters.weaker else RELEVANCE_CUTOFF  # the owner's words, not the assistant's
            message = f"No stored memory is relevant (none scored {cutoff:g} or more)."
            context.update(hits=found.results, message=message, memories=None, total=found.count, pages=1)
        else:
            where = filters.where()
            if where.tags:  # every stored spelling of the tags asked for (counted once, then kept current)
                where = where.spelled(await state.engine.tags())
            listed = await state.bulk.browse(where, (filters.page - 1) * PAGE_SIZE, PAGE_SIZE)
            pages = max(1, -(-listed.total // PAGE_SIZE))
            if filters.page > pages:  # past the end (e.g. after deleting): the last page
                filters = replace(filters, page=pages)
                listed = await state.bulk.browse(where, (pages - 1) * PAGE_SIZE, PAGE_SIZE)
                context["filters"] = filters
            context.update(hits=None, memories=listed.memories, total=listed.total, pages=pages, message="")
    except InvalidInputError as exc:
        context.update(hits=None, memories=[], total=0, pages=1, message=str(exc))
    except SymbioteError as exc:
        return problem(request, str(exc), status=503)
    context["empty"] = context["total"] == 0 and not filters.active and not context["message"]
    return page(request, "memories.html", **context)


async def tag_options(request: Request) -> Response:
    """The tag picker's suggestions, most used first: asked for by the list page once it is shown, so
    the first page after a start does not wait for the tags to be counted."""
    try:
        tags = list(await console_state(request).engine.tags())[:MAX_TAGS_OFFERED]
    except SymbioteError as exc:
        return problem(request, str(exc), status=503)
    return fragment("_tag_options.html", tags=tags)


async def memory_page(request: Request) -> Response:
    memory_id = request.path_params["memory_id"]
    if not is_memory_id(memory_id):
        return problem(request, "No such memory.", status=404)
    try:
        found = await console_state(request).bulk.fetch([memory_id])
    except SymbioteError as exc:
        return problem(request, str(exc), status=503)
    if memory_id not in found:
        return problem(request, f"No memory has the id {memory_id}.", status=404)
    return page(request, "memory.html", memory=found[memory_id], saved=request.query_params.get("saved"))
