"""What the owner's tools need from the memory engine beyond what assistants use: browse every
memory with filters, read memories and their vectors in bulk, delete a selection, and import
memories that keep their ids and times.

These go through the engine's own store access (worker threads, the writer lease, retries, disk
space and quota checks) and keep its statistics current, exactly as the tools' writes do; only
the choice of what to write differs.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from symbiote.embedding import MODEL_DIMENSION
from symbiote.memory.clock import iso_utc
from symbiote.memory.trash import OWNER
from symbiote.memory.write_policy import EnginePolicy, check_quota
from symbiote.storage import LINK_FIELDS, MemoryFilter, MemoryStore, Reach, StoredMemory

if TYPE_CHECKING:
    import numpy as np

    from symbiote.embedding.embedder import AsyncEmbedder
    from symbiote.memory.statistics import Statistics
    from symbiote.memory.store_io import StoreIO
    from symbiote.memory.trash import MemoryTrash

Outcome = Literal["added", "unchanged", "updated", "kept", "conflict", "replaced"]
IMPORTED = "import"  # what stored a memory an import added (the file does not say)
FETCH_BATCH = 500  # memories per read when a whole store is walked


@dataclass(frozen=True)
class BrowsePage:
    memories: list[StoredMemory]  # newest first
    total: int  # how many match the filter


def _newest_first(heads: list[StoredMemory]) -> list[StoredMemory]:
    return sorted(heads, key=lambda m: (m.created_us, m.memory_id), reverse=True)


def _same(a: StoredMemory, b: StoredMemory) -> bool:
    fields = (
        "content",
        "tags",
        "type",
        "confidence",
        "bookmarked",
        "conversation_id",
        "created_us",
        "updated_us",
        *LINK_FIELDS,
    )
    same = operator.attrgetter(*fields)
    return same(a) == same(b)


def _changed_at(memory: StoredMemory) -> int:
    return memory.updated_us or memory.created_us


class MemoryBulk:
    """Bulk reads and writes over the engine's store, for the console, export and import."""

    def __init__(
        self,
        embedder: AsyncEmbedder,
        io: StoreIO[MemoryStore],
        stats: Statistics,
        policy: Callable[[], EnginePolicy],
        trash: MemoryTrash,
    ) -> None:
        self._embedder = embedder
        self._trash = trash
        self._io = io
        self._stats = stats
        self._policy = policy
        self._aside: tuple[Reach[MemoryStore], list[tuple[StoredMemory, str]]] | None = None
        self._losses: tuple[Reach[MemoryStore], list[str]] | None = None

    @property
    def max_content_bytes(self) -> int:
        """SYMBIOTE_MAX_CONTENT_BYTES as configured: an import holds each memory to it, as the tools do."""
        return self._policy().max_content_bytes

    # -- reads -----------------------------------------------------------------------------

    async def browse(self, where: MemoryFilter | None, offset: int, limit: int) -> BrowsePage:
        """One page of the memories matching `where`, newest first, and how many match in all."""
        io = self._io
        memories, total = await io.read(MemoryStore.browse, where, offset, limit)
        return BrowsePage(memories, total)

    async def ids_oldest_first(self) -> list[str]:
        """Every memory id, oldest first: an export's order, fixed before its first line is written."""
        io = self._io
        heads = await io.read_in("background", MemoryStore.scan, None)
        return [m.memory_id for m in reversed(_newest_first(heads))]

    async def fetch(self, memory_ids: Sequence[str]) -> dict[str, StoredMemory]:
        io = self._io
        return await io.read_in("background", MemoryStore.get, list(memory_ids))

    async def vectors(self, memory_ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Each memory's stored vectors (its whole text first, then its passages)."""
        io = self._io
        return await io.read_in("background", MemoryStore.vectors, list(memory_ids))

    async def set_aside(self) -> list[tuple[StoredMemory, str]]:
        """The memories set aside at open, each with why (`MemoryStore.set_aside`): they change only
        when a store opens, so they are read once per store opened (health asks on every probe)."""
        reach = await self._io.opened()
        if self._aside is None or self._aside[0] is not reach:
            self._aside = (reach, await self._io.read_in("background", MemoryStore.set_aside))
        return list(self._aside[1])

    async def losses(self) -> list[str]:
        """What the store's open could not recover (`MemoryStore.losses`), read once per store opened."""
        reach = await self._io.opened()
        if self._losses is None or self._losses[0] is not reach:
            self._losses = (reach, await self._io.read_in("background", MemoryStore.losses))
        return list(self._losses[1])

    # -- writes ----------------------------------------------------------------------------

    async def delete_many(self, memory_ids: Sequence[str]) -> list[str]:
        """Move the owner's selection to the trash in one write; returns the ids that existed."""
        return await self._trash.move(memory_ids, OWNER)

    async def write_links(self, memories: Sequence[StoredMemory]) -> None:
        """Write only these memories' link fields, in one go (an import's links, checked, once both
        ends of each are stored)."""
        io = self._io
        await io.write(MemoryStore.set_links, list(memories))

    async def matching_ids(self, where: MemoryFilter | None, limit: int) -> tuple[list[str], int]:
        """The ids of up to `limit` memories matching `where`, newest first, and how many match."""
        page = await self.browse(where, 0, limit)
        return [m.memory_id for m in page.memories], page.total

    async def import_memories(
        self,
        items: Sequence[tuple[StoredMemory, np.ndarray | None]],
        dry_run: bool = False,
        replace_conflicts: bool = False,
    ) -> list[tuple[Outcome, str]]:
        """Store memories as given (ids, times, metadata), each against what is stored:

        - the same id with other text: a conflict, left as stored, unless `replace_conflicts` (the
          owner asked for the given copies): then replaced, whatever the times say;
        - the same id with the same fields: unchanged; with the same text and other fields: updated
          when the given copy changed later than the stored one, else kept as stored (nothing newer
          is lost);
        - a new id whose text is already stored (under another id): unchanged;
        - otherwise added, all of them in one all-or-nothing write.

        `items` must not repeat an id or a text (the caller resolves repeats within a file). Vectors
        given are used when there is one per passage; otherwise the text is embedded.
        """
        io = self._io
        await io.opened()
        by_id = await io.read_in("background", MemoryStore.get, [m.memory_id for m, _ in items])
        fresh_hashes = [m.content_hash for m, _ in items if m.memory_id not in by_id]
        by_text = await io.read_in("background", MemoryStore.find_contents, fresh_hashes) if fresh_hashes else {}
        outcomes: list[tuple[Outcome, str]] = []
        adds: list[tuple[StoredMemory, Any]] = []
        updates: list[tuple[StoredMemory, StoredMemory, Any]] = []
        for memory, vectors in items:
            memory = replace(memory, timestamp=iso_utc(memory.created_us), client=memory.client or IMPORTED)
            old = by_id.get(memory.memory_id)
            if old is not None:  # what stored it and how often it was edited stay the stored copy's
                memory = replace(memory, client=old.client, edits=old.edits)
            if old is not None:
                if _same(old, memory):
                    outcomes.append(("unchanged", memory.memory_id))
                elif old.content != memory.content:
                    outcomes.append(("replaced" if replace_conflicts else "conflict", memory.memory_id))
                    if replace_conflicts:
                        updates.append((old, memory, vectors))
                elif _changed_at(memory) > _changed_at(old):
                    outcomes.append(("updated", memory.memory_id))
                    updates.append((old, memory, vectors))
                else:
                    outcomes.append(("kept", memory.memory_id))
            elif memory.content_hash in by_text:
                outcomes.append(("unchanged", by_text[memory.content_hash].memory_id))
            else:
                outcomes.append(("added", memory.memory_id))
                adds.append((memory, vectors))
        await check_quota(self._policy(), io, len(adds))
        if dry_run:
            return outcomes
        if adds:
            batch = await self._embedded(adds)
            await io.ensure_space([text for _m, _v, windows in batch for text in windows])
            await io.write(MemoryStore.add_many, batch)
            for memory, _vectors, _windows in batch:
                self._stats.added(memory)
        rewritten = [(memory, vectors) for old, memory, vectors in updates if memory.content != old.content]
        embedded = {m.memory_id: (v, w) for m, v, w in await self._embedded(rewritten)} if rewritten else {}
        for old, memory, _vectors in updates:
            if memory.memory_id in embedded:
                vectors, windows = embedded[memory.memory_id]
                await io.ensure_space(windows)
                await io.write(MemoryStore.replace, memory, vectors, windows)
            else:
                await io.ensure_space([""])
                await io.write(MemoryStore.replace, memory, None, [])
            self._stats.replaced(old, memory)
        return outcomes

    async def _embedded(
        self, items: Sequence[tuple[StoredMemory, np.ndarray | None]]
    ) -> list[tuple[StoredMemory, np.ndarray, list[str]]]:
        """Each memory with its vectors and passages: the given vectors when there is one per
        passage, else the model's (`AsyncEmbedder.passages`). The texts go to the model shortest
        first, so each slice is padded to a similar length rather than to its longest."""
        passages = [await self._embedder.windows(memory.content) for memory, _ in items]
        reuse = [
            vectors is not None and len(vectors) == len(windows) and vectors.shape[1] == MODEL_DIMENSION
            for (_m, vectors), windows in zip(items, passages)
        ]
        wanted = sorted({memory.content for (memory, _v), ok in zip(items, reuse) if not ok}, key=len)
        made = dict(zip(wanted, await self._embedder.passages(wanted, complete=True))) if wanted else {}
        return [
            (memory, vectors, windows)
            if vectors is not None and ok
            else (memory, made[memory.content].vectors, made[memory.content].windows)
            for (memory, vectors), windows, ok in zip(items, passages, reuse)
        ]
