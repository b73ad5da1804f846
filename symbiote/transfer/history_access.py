"""The conversation history as an export and the console read it: every turn, a page at a time,
and the list of conversations."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from symbiote.memory import ConversationHistory


@dataclass(frozen=True)
class ConversationSummary:
    conversation_id: str
    turns: int
    last_ts: str


class TurnReader:
    """Reads through the history service, which opens its store and runs the reads off the event loop."""

    def __init__(self, history: ConversationHistory) -> None:
        self._history = history

    async def count(self) -> int:
        return await self._history.count_turns()

    async def turns(self, offset: int, limit: int) -> Sequence[tuple[str, int, str, str, str]]:
        rows = await self._history.page_turns(offset, limit)
        return [(t.conversation_id, t.turn_index, t.role, t.text, t.ts) for t in rows]

    async def conversations(self) -> list[ConversationSummary]:
        found = await self._history.conversations()
        return [ConversationSummary(cid, turns, last) for cid, turns, last in found]


def turn_reader(history: ConversationHistory) -> TurnReader:
    return TurnReader(history)
