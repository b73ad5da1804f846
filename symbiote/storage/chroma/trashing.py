"""The trash: deleted memories kept until restored or purged (`symbiote.storage.chroma.side_database`).

A deleted memory leaves the memories' collection, its passages and the keyword index at once, so
no search, read or count sees it; its record (text, metadata, the whole text's vector) goes to the
trash's rows with when and by whom it was deleted. Restoring adds it back under its own id with that
vector and queues its passages, which are embedded again as after any store.

Chroma and the side database cannot share a transaction, so a move is ordered to be safe wherever
it stops: the trash row (for a delete) and a `moving` mark are committed first, durably, so the
memory is in both places; then Chroma is written; then the mark is cleared. A failure or a crash
in between leaves a mark, which `settle` reads against Chroma, at once, at the next move and at
open: a memory still (or again) in Chroma stays stored, its trash row dropped and its keyword
entry put back; one no longer in Chroma stays in the trash. So a memory is always stored or in
the trash, never neither, and the error says which.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from symbiote.errors import StoreUnavailableError
from symbiote.storage.base import StoredMemory, TrashedMemory
from symbiote.storage.chroma.bulk_reads import chunk_ids
from symbiote.storage.chroma.codec import memory_from, metadata_of
from symbiote.storage.chroma.side_database import TrashRow
from symbiote.storage.disk_errors import is_transient, move_failure

if TYPE_CHECKING:
    from symbiote.storage.chroma.side_database import SideDatabase

log = logging.getLogger(__name__)


def _passages(meta: dict[str, Any]) -> int:
    return int(meta.get("windows", 1) or 1)


class Trash:
    """Moving a store's memories to the trash, back, and out for good (`ChromaMemoryStore` holds
    one and hands it its collections and keyword index)."""

    def __init__(self, memories: Any, chunks: Any, lexical: SideDatabase, write_journal: Callable[[], None]) -> None:
        """`write_journal`: writes to Chroma the memories the journal holds (`ChromaMemoryStore`)."""
        self._memories = memories
        self._chunks = chunks
        self._lexical = lexical
        self._write_journal = write_journal

    def trash(self, memory_ids: Sequence[str], deleted_by: str, deleted_us: int) -> list[str]:
        self.settle()
        if not memory_ids:
            return []
        got = self._memories.get(ids=list(memory_ids), include=["embeddings", "documents", "metadatas"])
        journalled = {row[0] for row in self._lexical.unwritten.all()} & (set(memory_ids) - set(got["ids"]))
        if journalled:  # acknowledged, their Chroma write refused so far (a full disk): written first
            try:
                self._write_journal()
            except Exception as exc:
                if is_transient(exc):
                    raise
                raise move_failure(exc, "Deleting", "still stored, not in the trash", sorted(journalled)) from exc
            got = self._memories.get(ids=list(memory_ids), include=["embeddings", "documents", "metadatas"])
        if not got["ids"]:
            return []
        rows = [
            TrashRow(mid, deleted_us, deleted_by, doc or "", dict(meta or {}), np.asarray(vector, dtype=np.float32))
            for mid, doc, meta, vector in zip(got["ids"], got["documents"], got["metadatas"], got["embeddings"])
        ]
        ids = [row.memory_id for row in rows]
        try:
            with self._lexical.transaction(durable=True) as tx:  # first: the memory is in both places
                self._lexical.trash.put(rows)
                self._lexical.trash.mark(ids)
                for mid in ids:
                    tx.delete(mid)
        except Exception as exc:  # nothing was written
            if is_transient(exc):  # retried by the caller
                raise
            raise move_failure(exc, "Deleting", "still stored, not in the trash", ids) from exc
        try:
            chunks = [cid for row in rows for cid in chunk_ids(row.memory_id, _passages(row.meta))]
            if chunks:  # before the memories: a memory stored never misses its passages for good
                self._chunks.delete(ids=chunks)
            self._memories.delete(ids=ids)
        except Exception as exc:
            log.exception("deleting %d memories from Chroma failed; settling them", len(ids))
            stored = self._settle_or_tell(exc, "Deleting", ids)
            if stored:
                raise move_failure(exc, "Deleting", "still stored, not in the trash", stored) from exc
            return ids  # Chroma raised, yet every one of them left it: they are in the trash
        self._unmark(ids)
        return ids

    def restore(self, memory_ids: Sequence[str]) -> list[str]:
        self.settle()
        rows = self._lexical.trash.take(memory_ids)
        if not rows:
            return []
        ids = [row.memory_id for row in rows]
        memories: list[tuple[StoredMemory, int]] = [
            (memory_from(row.memory_id, row.body, row.meta), _passages(row.meta)) for row in rows
        ]
        try:
            with self._lexical.transaction(durable=True):
                self._lexical.trash.mark(ids)
        except Exception as exc:
            if is_transient(exc):
                raise
            raise move_failure(exc, "Restoring", "still in the trash", ids) from exc
        try:
            self._memories.add(
                ids=ids,
                embeddings=np.stack([row.vector for row in rows if row.vector is not None]),
                documents=[m.content for m, _ in memories],
                metadatas=[metadata_of(m, passages) for m, passages in memories],
            )
        except Exception as exc:
            log.exception("restoring %d memories into Chroma failed; settling them", len(ids))
            stored = set(self._settle_or_tell(exc, "Restoring", ids))
            if len(stored) < len(ids):
                raise move_failure(exc, "Restoring", "still in the trash", [i for i in ids if i not in stored]) from exc
            return ids
        try:
            with self._lexical.transaction(durable=True) as tx:
                for memory, passages in memories:
                    tx.delete(memory.memory_id)
                    tx.add(memory.memory_id, memory.created_us, memory.content)
                    if passages > 1:
                        tx.queue_passages(memory.memory_id, None)  # embedded again, as after storing
                self._lexical.trash.remove(ids)
                self._lexical.trash.unmark(ids)
        except Exception as exc:  # stored in Chroma, still in the trash: take it out of Chroma again
            log.exception("the side database refused %d restored memories; undoing their restore", len(ids))
            try:
                self._memories.delete(ids=ids)
            except Exception:
                log.exception("undoing the restore in Chroma failed; settled at the next move or open")
                raise StoreUnavailableError(
                    f"Restoring failed ({exc}): {', '.join(ids[:5])} may be restored or still in the trash, "
                    "never lost; which is settled at the next delete, restore or start."
                ) from exc
            self._unmark(ids)
            raise move_failure(exc, "Restoring", "still in the trash", ids) from exc
        return ids

    def purge(self, memory_ids: Sequence[str]) -> list[str]:
        self.settle()
        if not memory_ids:
            return []
        with self._lexical.transaction():
            return self._lexical.trash.remove(list(memory_ids))

    def settle(self) -> None:
        """Finish what an interrupted move, update or delete left (`moving`): at open and before each of
        them; one read when nothing is left."""
        left = self._lexical.trash.moving()
        if left:
            stored = self._settle(left)
            log.warning(
                "%d memories a delete, restore or update left unfinished were settled: %d stored, %d deleted",
                len(left),
                len(stored),
                len(left) - len(stored),
            )

    def _settle_or_tell(self, exc: Exception, doing: str, memory_ids: list[str]) -> list[str]:
        """`_settle` right after Chroma's write failed; if that fails too, an error that says the
        memories are stored or in the trash, and when that is settled."""
        try:
            return self._settle(memory_ids)
        except Exception as settling:
            log.exception("settling %d memories after a failed move failed", len(memory_ids))
            raise StoreUnavailableError(
                f"{doing} failed ({exc}), then reading the store failed ({settling}): {', '.join(memory_ids[:5])} "
                "are each still stored or in the trash, never lost; which is settled at the next delete, restore "
                "or start."
            ) from exc

    def _settle(self, memory_ids: list[str]) -> list[str]:
        """Read each memory against Chroma: one there stays stored (its trash row, if the same text,
        dropped; its keyword entry and passages put back); one not there stays in the trash (its
        keyword entry dropped). Returns the ids stored."""
        got = self._memories.get(ids=memory_ids, include=["documents", "metadatas"])
        stored = {
            mid: (doc or "", dict(meta or {}))
            for mid, doc, meta in zip(got["ids"], got["documents"] or [], got["metadatas"] or [])
        }
        trashed = {row.memory_id: row for row in self._lexical.trash.take(list(stored))}
        indexed = self._lexical.bodies(list(stored))
        with self._lexical.transaction(durable=True) as tx:
            for mid in memory_ids:
                if mid not in stored:
                    tx.delete(mid)
                    continue
                body, meta = stored[mid]
                if mid in trashed and trashed[mid].body == body:
                    self._lexical.trash.remove([mid])
                if indexed.get(mid) != body:
                    tx.delete(mid)
                    tx.add(mid, memory_from(mid, body, meta).created_us, body)
                if _passages(meta) > 1:  # some may have gone; upserted, those still there are written unchanged
                    tx.queue_passages(mid, None)
            self._lexical.trash.unmark(memory_ids)
        return [mid for mid in memory_ids if mid in stored]

    def _unmark(self, memory_ids: list[str]) -> None:
        """Clear the marks of a move that is done; one left is settled (to the same result) later."""
        try:
            with self._lexical.transaction():
                self._lexical.trash.unmark(memory_ids)
        except Exception:
            log.warning("clearing %d finished moves failed; settled at the next one", len(memory_ids), exc_info=True)

    def trashed(
        self, offset: int, limit: int, memory_ids: Sequence[str] | None = None
    ) -> tuple[list[TrashedMemory], int]:
        if memory_ids is not None:
            rows, total = self._lexical.trash.take(memory_ids), self._lexical.trash.page(0, 0)[1]
        else:
            rows, total = self._lexical.trash.page(offset, limit)
        return [
            TrashedMemory(memory_from(row.memory_id, row.body, row.meta), row.deleted_us, row.deleted_by)
            for row in rows
        ], total
