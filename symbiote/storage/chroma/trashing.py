"""The trash: deleted memories kept until restored or purged (`symbiote.storage.chroma.side_database`).

A deleted memory leaves the memories' collection, its passages and the keyword index at once, so
no search, read or count sees it; its record (text, metadata, the whole text's vector) goes to the
trash's rows with when and by whom it was deleted, in the keyword index's transaction that commits
only after Chroma let the memory go. Restoring adds it back under its own id with that vector and
queues its passages, which are embedded again as after any store.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from symbiote.storage.base import StoredMemory, TrashedMemory
from symbiote.storage.chroma.bulk_reads import chunk_ids
from symbiote.storage.chroma.codec import memory_from, metadata_of
from symbiote.storage.chroma.side_database import TrashRow

if TYPE_CHECKING:
    from symbiote.storage.chroma.side_database import LexicalIndex


def _passages(meta: dict[str, Any]) -> int:
    return int(meta.get("windows", 1) or 1)


class Trash:
    """Moving a store's memories to the trash, back, and out for good (`ChromaMemoryStore` holds
    one and hands it its collections and keyword index)."""

    def __init__(self, memories: Any, chunks: Any, lexical: LexicalIndex) -> None:
        self._memories = memories
        self._chunks = chunks
        self._lexical = lexical

    def trash(self, memory_ids: Sequence[str], deleted_by: str, deleted_us: int) -> list[str]:
        if not memory_ids:
            return []
        got = self._memories.get(ids=list(memory_ids), include=["embeddings", "documents", "metadatas"])
        if not got["ids"]:
            return []
        rows = [
            TrashRow(mid, deleted_us, deleted_by, doc or "", dict(meta or {}), np.asarray(vector, dtype=np.float32))
            for mid, doc, meta, vector in zip(got["ids"], got["documents"], got["metadatas"], got["embeddings"])
        ]
        with self._lexical.transaction() as tx:  # committed only once Chroma let them go
            for row in rows:
                tx.delete(row.memory_id)
            self._lexical.trash.put(rows)
            self._memories.delete(ids=[row.memory_id for row in rows])
            chunks = [cid for row in rows for cid in chunk_ids(row.memory_id, _passages(row.meta))]
            if chunks:
                self._chunks.delete(ids=chunks)
        return [row.memory_id for row in rows]

    def restore(self, memory_ids: Sequence[str]) -> list[str]:
        rows = self._lexical.trash.take(memory_ids)
        if not rows:
            return []
        memories: list[tuple[StoredMemory, int]] = [
            (memory_from(row.memory_id, row.body, row.meta), _passages(row.meta)) for row in rows
        ]
        written = False
        try:
            with self._lexical.transaction() as tx:
                for memory, passages in memories:
                    tx.add(memory.memory_id, memory.created_us, memory.content)
                    if passages > 1:
                        tx.queue_passages(memory.memory_id, None)  # embedded again, as after a store
                self._lexical.trash.remove([row.memory_id for row in rows])
                self._memories.add(
                    ids=[m.memory_id for m, _ in memories],
                    embeddings=np.stack([row.vector for row in rows if row.vector is not None]),
                    documents=[m.content for m, _ in memories],
                    metadatas=[metadata_of(m, passages) for m, passages in memories],
                )
                written = True
        except BaseException:
            if written:  # the index commit failed after Chroma took the write: undo it
                self._memories.delete(ids=[m.memory_id for m, _ in memories])
            raise
        return [row.memory_id for row in rows]

    def purge(self, memory_ids: Sequence[str]) -> list[str]:
        if not memory_ids:
            return []
        with self._lexical.transaction():
            return self._lexical.trash.remove(list(memory_ids))

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
