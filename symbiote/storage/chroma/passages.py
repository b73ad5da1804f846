"""A memory's extra passages (its sentences, or a long text's paragraphs and spans), indexed after
the store that wrote the memory was acknowledged.

A store needs only the whole text's vector to be findable by meaning; its passages sharpen search
for one sentence of a longer memory. Embedding them took most of a store's time, so the store
queues them in the keyword index's file (`LexicalIndex.queue_passages`), in the transaction that
writes the memory, and the engine indexes them right after (`symbiote.memory.passages`). The queue
is durable: what a crash interrupts is indexed after the next open.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from symbiote.storage.chroma.bulk_reads import chunk_ids, read_all

if TYPE_CHECKING:
    import numpy as np

    from symbiote.storage.base import StoredMemory
    from symbiote.storage.chroma.keywords import LexicalIndex


def chunk_records(
    memory: StoredMemory, passage_vectors: np.ndarray, windows: Sequence[str]
) -> tuple[list[str], list[list[float]], list[str], list[dict[str, Any]]]:
    """Chroma's ids, vectors, documents and metadata for passages 1.. of a memory (`passage_vectors`:
    the vectors of windows[1:])."""
    ids = chunk_ids(memory.memory_id, len(windows))
    meta = [
        {"memory_id": memory.memory_id, "window": i, "created_us": memory.created_us} for i in range(1, len(windows))
    ]
    return ids, passage_vectors.tolist(), list(windows[1:]), meta


class DeferredPassages:
    """The queue of passages still to index, and indexing them into a store's passage collection
    (`ChromaMemoryStore` holds one and hands it what it writes)."""

    def __init__(
        self, chunks: Any, lexical: LexicalIndex, get: Callable[[Sequence[str]], dict[str, StoredMemory]]
    ) -> None:
        """`get`: the store's own read of whole memories by id (a memory deleted since is skipped)."""
        self._chunks = chunks
        self._lexical = lexical
        self.get = get

    def pending_passages(self, limit: int) -> list[tuple[str, list[str] | None, str]]:
        """Up to `limit` queued memories, oldest first: (memory id, its passages or None to work
        them out from the text, the text)."""
        return self._lexical.pending(limit)

    def add_passages(self, items: Sequence[tuple[str, np.ndarray, Sequence[str]]]) -> int:
        """Index queued passages: (memory id, the vectors of windows[1:], the windows, the whole text
        first). A memory deleted or rewritten since it was queued is skipped; upserts, so a
        batch that a crash interrupted can be indexed again. Returns how many memories were indexed."""
        queued = self._lexical.queued([mid for mid, _v, _w in items])
        live = self.get([mid for mid, _v, _w in items if mid in queued])
        ids: list[str] = []
        vectors: list[list[float]] = []
        docs: list[str] = []
        meta: list[dict[str, Any]] = []
        for mid, item_vectors, windows in items:
            memory = live.get(mid)
            if memory is None or not windows or windows[0] != memory.content:
                continue
            part = chunk_records(memory, item_vectors, windows)
            ids += part[0]
            vectors += part[1]
            docs += part[2]
            meta += part[3]
        if ids:
            self._chunks.upsert(ids=ids, embeddings=vectors, documents=docs, metadatas=meta)
        self._lexical.dequeue([mid for mid, _v, _w in items])
        return len(live)

    def queue_unindexed(self, everything: dict[str, Any]) -> None:
        """After the keyword index was rebuilt from Chroma: queue every memory whose passages are
        not all in Chroma (a queue lost with the index file, or a write a crash interrupted)."""
        expected = {
            mid: int((meta or {}).get("windows", 1) or 1)
            for mid, meta in zip(everything["ids"], everything["metadatas"] or [])
        }
        last = [f"{mid}#{n - 1}" for mid, n in expected.items() if n > 1]
        if not last:
            return
        present = set(read_all(self._chunks, [], ids=last)["ids"])
        missing = [cid.rsplit("#", 1)[0] for cid in last if cid not in present]
        if missing:
            with self._lexical.transaction() as tx:
                for mid in missing:
                    tx.queue_passages(mid, None)
