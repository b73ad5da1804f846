"""Conversation history: the turns of each conversation, kept beside (never inside) the memories.

The turns live in a Chroma collection of their own, next to the memories, through the same
client (`symbiote.storage.chroma.history_store` says where and how). This is the service over that store:
it checks arguments, embeds each turn (which is what lets history be searched when that is
asked for: `ConversationHistory.search`) and returns what the tools show.

Turn numbering: a turn appended without `turn_index` gets the conversation's last index + 1
(0 for the first); two writers racing for the same index never overwrite each other. A turn
appended again with an explicit `turn_index` and the same role and text is reported as a
duplicate (a client's retry); with other text it is refused, never overwritten. Turns are
returned in `turn_index` order.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import asdict
from typing import Any, Literal

from pydantic import BaseModel, Field

from symbiote.embedding.embedder import AsyncEmbedder
from symbiote.errors import InvalidInputError
from symbiote.memory import validation
from symbiote.memory.clock import instant_us, iso_utc, now_us
from symbiote.memory.keyed_lock import KeyedLock
from symbiote.memory.store_io import StoreIO
from symbiote.retrieval import cohort
from symbiote.retrieval.cohort import Cohort
from symbiote.retrieval.ranking import meaning_relevance
from symbiote.retrieval.thresholds import RELEVANCE_CUTOFF
from symbiote.storage import DiskSpace, HistoryStore, Reach, StoredTurn
from symbiote.storage import text as unicode_text

__all__ = ["AppendResult", "ConversationHistory", "History", "HistoryHit", "Turn", "parse_ts"]

log = logging.getLogger(__name__)

ROLES = ("user", "assistant", "system")
MAX_TURN_CHARS = 100_000
MAX_TURN_INDEX = 999_999_999
MAX_GET = 500

Role = Literal["user", "assistant", "system"]


# -- what the tools return ---------------------------------------------------------------------


class Turn(BaseModel):
    """One turn of a conversation."""

    conversation_id: str
    turn_index: int = Field(description="Position in the conversation; turns are ordered by it.")
    role: Role
    text: str
    ts: str = Field(description="When the turn was said, ISO-8601 UTC.")
    text_chars: int | None = Field(
        default=None,
        description="Set where `text` is the turn's part (a reply holds under 10,000 tokens): its whole length.",
    )
    next_offset: int | None = Field(
        default=None,
        description="Where the rest of a long turn's text starts: get_history with n=1, before=turn_index+1 "
        "and this as offset.",
    )


class AppendResult(BaseModel):
    conversation_id: str
    turn_index: int = Field(description="The index the turn has (assigned when none was given).")
    ts: str
    status: Literal["appended", "duplicate"] = Field(
        description="'duplicate': this exact turn was already stored at this index; nothing new was written."
    )
    message: str


class History(BaseModel):
    conversation_id: str
    turns: list[Turn] = Field(description="The last turns, oldest first (chronological order).")
    count: int
    total_turns: int = Field(description="How many turns the conversation has in all.")


class HistoryHit(Turn):
    similarity: float = Field(description="Cosine similarity between the query and the turn, -1..1.")
    relevance_score: float = Field(
        description="How likely the turn is what the query asks for, 0-100: the memories' scale and cut-off."
    )


# -- arguments -----------------------------------------------------------------------------------


def check_role(value: Any) -> str:
    word = value.strip().lower() if isinstance(value, str) else value
    if word not in ROLES:
        raise InvalidInputError(f"role must be one of {', '.join(ROLES)} (got {value!r}).")
    return str(word)


def check_text(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError("text is empty: give what was said in this turn.")
    text = unicode_text.text(value, "text").strip()
    if len(text) > MAX_TURN_CHARS:
        raise InvalidInputError(f"text is {len(text)} characters long; a turn may have at most {MAX_TURN_CHARS}.")
    return text


def check_turn_index(value: Any, name: str = "turn_index") -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TURN_INDEX:
        raise InvalidInputError(f"{name} must be a whole number from 0 to {MAX_TURN_INDEX} (got {value!r}).")
    return value


def parse_ts(value: Any) -> tuple[str, int]:
    """(ISO-8601 UTC with Z, microseconds) for `value`, or for now when it is None."""
    if value is None or (isinstance(value, str) and not value.strip()):
        micros = now_us()
    else:
        if not isinstance(value, str):
            raise InvalidInputError("ts must be an ISO-8601 date/time like '2026-11-21T09:30:00Z'.")
        try:
            micros = instant_us(value)
        except ValueError:
            raise InvalidInputError(f"ts={value!r} is not an ISO-8601 date/time like '2026-11-21T09:30:00Z'.") from None
    return iso_utc(micros), micros


def check_count(value: Any, name: str = "n", high: int = MAX_GET) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= high:
        raise InvalidInputError(f"{name} must be a whole number from 1 to {high} (got {value!r}).")
    return value


def _public(turn: StoredTurn) -> Turn:
    return Turn(**asdict(turn))  # the role is checked here, by the model


# -- the service (async) -----------------------------------------------------------------------


class ConversationHistory:
    """Appends and reads conversation turns; the store is opened on first use, like the memory store's."""

    def __init__(
        self,
        embedder: AsyncEmbedder,
        open_reach: Callable[[str, int], Reach[HistoryStore]],
        space: DiskSpace | None = None,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        """`on_close`: what else to let go of once the store is closed (e.g. the Chroma client it used)."""
        self._embedder = embedder
        self._on_close = on_close
        # The memory store's way of calling a store: the same priorities, write retries and spans.
        self._io: StoreIO[HistoryStore] = StoreIO(open_reach, space, "conversation history")
        self._appending = KeyedLock()
        self._background: Cohort | None = None

    def close(self) -> None:
        """End the store's threads and close it, then `on_close`."""
        self._io.shutdown()
        if self._on_close is not None:
            self._on_close()

    async def append(
        self, conversation_id: Any, role: Any, text: Any, turn_index: Any = None, ts: Any = None
    ) -> AppendResult:
        cid = validation.conversation_id(conversation_id)
        who = check_role(role)
        said = check_text(text)
        index = check_turn_index(turn_index)
        stamp, micros = parse_ts(ts)
        await self._io.opened()
        vector = (await self._embedder.embed([said]))[0]
        await self._io.ensure_space([said])
        async with self._appending.hold(cid):  # this instance's appends to one conversation, one at a time
            turn, written = await self._io.write(HistoryStore.add, cid, who, said, stamp, micros, vector, index)
        if written:
            message = f"Turn {turn.turn_index} appended to conversation {cid!r}."
        else:
            message = f"Turn {turn.turn_index} of conversation {cid!r} was already stored with this text; kept as is."
        return AppendResult(
            conversation_id=cid,
            turn_index=turn.turn_index,
            ts=turn.ts,
            status="appended" if written else "duplicate",
            message=message,
        )

    async def get(self, conversation_id: Any, n: Any = 16, before: Any = None) -> History:
        """The last `n` turns, oldest first; with `before`, the last `n` before that turn_index (to page back)."""
        cid = validation.conversation_id(conversation_id)
        last = check_count(n)
        earlier = check_turn_index(before, "before")
        stored, total = await self._io.read(HistoryStore.get_turns, cid, last, earlier)
        turns = [_public(turn) for turn in stored]
        return History(conversation_id=cid, turns=turns, count=len(turns), total_turns=total)

    async def count_turns(self) -> int:
        """Turns in all conversations."""
        return int(await self._io.read(HistoryStore.count))

    async def page_turns(self, offset: int, limit: int) -> list[StoredTurn]:
        """Every turn, a page at a time in the order they were stored: for an export."""
        return list(await self._io.read(HistoryStore.page_turns, offset, limit))

    async def conversations(self) -> list[tuple[str, int, str]]:
        """(conversation id, turns, time of the last turn), most recent first: for the owner's console."""
        return list(await self._io.read(HistoryStore.conversations))

    async def search(
        self, query: Any, conversation_id: Any = None, limit: Any = 5, min_relevance: Any = None
    ) -> list[HistoryHit]:
        """Turns similar to `query` (in one conversation, or in all), best first: history search, only
        when asked for. Scored and cut as memories are (`relevance_score`, default cut-off 30), by
        meaning alone: a turn has no keyword index."""
        if not isinstance(query, str) or not query.strip():
            raise InvalidInputError("query is empty: say what to look for in the conversation history.")
        unicode_text.text(query, "query")
        cid = validation.conversation_id(conversation_id) if conversation_id is not None else None
        k = check_count(limit, "limit", 50)
        cutoff = validation.min_relevance(min_relevance, RELEVANCE_CUTOFF)
        await self._io.opened()
        vector = (await self._embedder.embed([query.strip()], urgent=True))[0]
        if self._background is None:
            self._background = await cohort.embedded(self._embedder)
        found = await self._io.read(HistoryStore.search, vector, k, cid)
        scores = meaning_relevance(
            query.strip(),
            [turn.text for turn, _sim in found],
            [sim for _turn, sim in found],
            self._background.closeness(vector),
        )
        hits = [
            HistoryHit(**asdict(turn), similarity=round(sim, 4), relevance_score=score)
            for (turn, sim), score in zip(found, scores)
        ]
        return [hit for hit in hits if hit.relevance_score >= cutoff]

    async def delete_conversation(self, conversation_id: Any) -> int:
        """Every turn of one conversation deleted, nothing else; how many turns there were."""
        cid = validation.conversation_id(conversation_id)
        await self._io.opened()
        async with self._appending.hold(cid):  # not while this instance appends to it
            return int(await self._io.write(HistoryStore.delete_conversation, cid))
