"""A memory's extra passages (its sentences, or a long text's paragraphs and spans), written to
Chroma after the store that wrote the memory was acknowledged.

A store needs only the whole text's vector in Chroma to be durable; its passages sharpen search
for one sentence of a longer memory. Writing them to Chroma took a third of storing's time, and
embedding a long text's spans most of it. So the store queues them in the keyword index's file
(`SideDatabase.queue_passages`), in the transaction that writes the memory, and:

- a text within the model's window brings its passages' vectors with it (one run of the model,
  `Embedder.embed_passages`): they are searched at once among the vectors held in memory, and
  written to Chroma by the store's own work between requests (`write_step`), never while a
  request waits;
- a longer text's spans are embedded and indexed by the engine right after
  (`symbiote.memory.passage_indexing`).

The queue is durable: what a crash interrupts is indexed after the next open.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from symbiote.storage.chroma.bulk_reads import chunk_ids, read_all

if TYPE_CHECKING:
    import numpy as np

    from symbiote.storage.base import StoredMemory
    from symbiote.storage.chroma.side_database import SideDatabase
    from symbiote.storage.chroma.vectors import VectorRows

Written = tuple["StoredMemory", "np.ndarray", Sequence[str]]  # a memory, its vectors (all or the first), its passages
log = logging.getLogger(__name__)

WRITE_STEP = 8  # memories whose held passages one step of work between requests writes to Chroma
HELD_PASSAGES = 5_000  # passages held at most; past them storing writes its passages itself


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


def passage_records(
    items: Sequence[Written], held: Sequence[bool]
) -> tuple[list[str], list[list[float]], list[str], list[dict[str, Any]]]:
    """`chunk_records` of the memories written with all their vectors, but those `held`."""
    ids: list[str] = []
    passage_vectors: list[list[float]] = []
    docs: list[str] = []
    meta: list[dict[str, Any]] = []
    for (memory, vectors, windows), holding in zip(items, held):
        if not holding and len(vectors) == len(windows) > 1:
            part = chunk_records(memory, vectors[1:], windows)
            ids += part[0]
            passage_vectors += part[1]
            docs += part[2]
            meta += part[3]
    return ids, passage_vectors, docs, meta


class DeferredPassages:
    """The queue of passages still to index, the passages held in memory until written, and
    writing them into a store's passage collection (`ChromaMemoryStore` holds one)."""

    def __init__(
        self, chunks: Any, lexical: SideDatabase, get: Callable[[Sequence[str]], dict[str, StoredMemory]]
    ) -> None:
        """`get`: the store's own read of whole memories by id (a memory deleted since is skipped)."""
        self._chunks = chunks
        self._lexical = lexical
        self.get = get
        self._held: dict[str, tuple[np.ndarray, list[str]]] = {}  # memory id -> vectors of windows[1:], windows
        self._held_count = 0

    def to_hold(
        self, rows: VectorRows | None, items: Sequence[tuple[StoredMemory, np.ndarray, Sequence[str]]]
    ) -> list[bool]:
        """Which of these memories' passages may wait in memory: those that came with their vectors,
        where searches see them (`rows`, the passage vectors held in memory, searched while ready)
        and while memory stays bounded."""
        passages = sum(len(windows) - 1 for _m, _v, windows in items)
        room = rows is not None and not rows.dropped and self._held_count + passages <= HELD_PASSAGES
        return [room and len(windows) > 1 and len(vectors) == len(windows) for _m, vectors, windows in items]

    def hold(self, rows: VectorRows | None, items: Sequence[Written], held: Sequence[bool]) -> None:
        """Hold the `held` memories' passages (queued in the same transaction): searchable at once,
        in `rows`; written to Chroma by `write_step`."""
        for (memory, vectors, windows), holding in zip(items, held):
            if holding and rows is not None:
                ids, _vectors, _docs, meta = chunk_records(memory, vectors[1:], windows)
                rows.put(ids, vectors[1:], meta)
                self._held[memory.memory_id] = (vectors[1:], list(windows))
                self._held_count += len(ids)

    @property
    def holding(self) -> bool:
        return bool(self._held)

    def write_step(self) -> bool:
        """Write up to WRITE_STEP memories' held passages to Chroma; True while more are held."""
        batch = list(self._held.items())[:WRITE_STEP]
        for mid, (vectors, _windows) in batch:
            del self._held[mid]
            self._held_count -= len(vectors)
        self.add_passages([(mid, vectors, windows) for mid, (vectors, windows) in batch])
        return bool(self._held)

    def write_all(self) -> None:
        """Write every held passage (at close). What fails stays queued, for the next open to index."""
        try:
            while self.write_step():
                pass
        except Exception as exc:  # noqa: BLE001 - a store being closed: the queue keeps what was not written
            log.warning(
                "passages held in memory were not written at close (%s); they are indexed at the next open", exc
            )

    def pending_passages(self, limit: int) -> list[tuple[str, list[str] | None, str]]:
        """Up to `limit` queued memories not held here, oldest first: (memory id, its passages or
        None to work them out from the text, the text)."""
        return self._lexical.pending(limit, exclude=list(self._held))

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
