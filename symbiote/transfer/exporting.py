"""Writing an export: the header, then every memory oldest first, then (when asked) every turn.

The lines are produced a batch at a time, so a download streams and a file is written as it
goes; nothing holds the whole store in memory. Which memories are exported is fixed when the
export starts (their ids); one deleted meanwhile is left out, one stored meanwhile waits for the
next export.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from typing import Protocol

from symbiote.embedding import MODEL_DIMENSION, MODEL_NAME
from symbiote.memory import FETCH_BATCH, MemoryBulk, iso_utc, now_us
from symbiote.transfer.export_format import Header, dumps, memory_record, turn_record

TURN_BATCH = 500


class TurnSource(Protocol):
    """The conversation history as an export reads it (symbiote.transfer.history_access)."""

    async def count(self) -> int: ...

    async def turns(self, offset: int, limit: int) -> Sequence[tuple[str, int, str, str, str]]:
        """(conversation_id, turn_index, role, text, ts), in a stable order."""
        ...


async def export_lines(
    bulk: MemoryBulk,
    history: TurnSource | None = None,
    *,
    with_vectors: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> AsyncIterator[str]:
    """The export, line by line (each ends with a newline). `history` given: its turns follow the
    memories. `progress(done, total)` is told after each batch of memories."""
    ids = await bulk.ids_oldest_first()
    aside = await bulk.set_aside()  # never in Chroma: their text as kept, U+FFFD where it was not Unicode
    turns = await history.count() if history is not None else 0
    header = Header(
        model=MODEL_NAME,
        dimension=MODEL_DIMENSION,
        memories=len(ids) + len(aside),
        turns=turns,
        exported_at=iso_utc(now_us()),
        vectors=with_vectors,
        history=history is not None,
    )
    yield header.line() + "\n"
    for start in range(0, len(ids), FETCH_BATCH):
        batch = ids[start : start + FETCH_BATCH]
        found = await bulk.fetch(batch)
        vectors = await bulk.vectors(batch) if with_vectors else {}
        lines = [
            dumps(memory_record(found[mid], vectors.get(mid) if with_vectors else None)) + "\n"
            for mid in batch
            if mid in found
        ]
        yield "".join(lines)
        if progress is not None:
            progress(min(start + FETCH_BATCH, len(ids)), len(ids))
    if aside:
        yield "".join(dumps(memory_record(memory)) + "\n" for memory, _why in aside)
    if history is None:
        return
    for offset in range(0, turns, TURN_BATCH):
        rows = await history.turns(offset, TURN_BATCH)
        yield "".join(dumps(turn_record(*row)) + "\n" for row in rows)
