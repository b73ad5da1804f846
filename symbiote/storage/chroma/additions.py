"""New memories into the keyword index and Chroma: all or none, or the Chroma write behind the answer.

`add` writes the keyword index and Chroma together: the index transaction commits only after the
Chroma write succeeded, and a failed commit undoes the Chroma write.

Write-behind, and the journal that makes it safe: a memory acknowledged before Chroma has it.

Chroma's add of one memory was a store's largest stage (10-19 ms of about 30 on two cores: its
core commits several SQLite transactions per call); the keyword index's commit takes a fraction of
a millisecond. So, in the store process, a new memory is committed to the keyword index together
with a journal row holding all Chroma needs (text, metadata, the whole text's vector), the store
is answered, and the Chroma write follows at once, before the process reads its next request
(`settle`, called by `symbiote.storage.chroma._store_child` after every reply): no call ever sees
the store between the two, and the engine embeds its next text meanwhile. A crash in between
loses nothing: the next open writes the journal's rows into Chroma before anything else reads it.

The journal is committed with `synchronous=FULL` (the keyword index's own commits are NORMAL):
an acknowledged memory survives a power cut, as it did when Chroma's commit acknowledged it.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from symbiote.storage.chroma.bulk_reads import chunk_ids
from symbiote.storage.chroma.codec import metadata_of
from symbiote.storage.chroma.passages import passage_records

if TYPE_CHECKING:
    from symbiote.storage.base import StoredMemory
    from symbiote.storage.chroma.keywords import LexicalIndex
    from symbiote.storage.chroma.passages import DeferredPassages
    from symbiote.storage.chroma.vectors import VectorRows

log = logging.getLogger(__name__)

Item = tuple["StoredMemory", np.ndarray, Sequence[str]]  # a memory, its vectors (all or the first), its passages


class UnwrittenRows:
    """The `unwritten` table in the keyword index's file: memories acknowledged, not yet in Chroma.
    `put` belongs inside `LexicalIndex.transaction(durable=True)` (the same connection)."""

    def __init__(self, conn: sqlite3.Connection, lock: threading.RLock) -> None:
        self._conn = conn
        self._lock = lock
        conn.execute(
            "CREATE TABLE IF NOT EXISTS unwritten "
            "(memory_id TEXT PRIMARY KEY, body TEXT NOT NULL, meta TEXT NOT NULL, vector BLOB NOT NULL)"
        )

    def put(self, items: Sequence[Item]) -> None:
        with self._lock:
            self._conn.executemany(
                "INSERT OR REPLACE INTO unwritten(memory_id, body, meta, vector) VALUES (?, ?, ?, ?)",
                [
                    (
                        memory.memory_id,
                        memory.content,
                        json.dumps(metadata_of(memory, len(windows))),
                        np.asarray(vectors[0], dtype=np.float32).tobytes(),
                    )
                    for memory, vectors, windows in items
                ],
            )

    def remove(self, memory_ids: Sequence[str]) -> None:
        """Forget these rows (their memories are in Chroma now), in a commit of its own."""
        with self._lock:
            self._conn.executemany("DELETE FROM unwritten WHERE memory_id = ?", [(mid,) for mid in memory_ids])

    def all(self) -> list[tuple[str, str, dict[str, Any], np.ndarray]]:
        with self._lock:
            rows = self._conn.execute("SELECT memory_id, body, meta, vector FROM unwritten ORDER BY rowid").fetchall()
        return [
            (str(mid), str(body), json.loads(meta), np.frombuffer(vector, dtype=np.float32))
            for mid, body, meta, vector in rows
        ]


class Additions:
    """Writes new memories (and the passages that come with their vectors) into a store's
    collections and keyword index, and keeps the ones whose Chroma write is still to come, in order."""

    def __init__(
        self,
        memories: Any,
        chunks: Any,
        lexical: LexicalIndex,
        passages: DeferredPassages,
        rows: Callable[[], VectorRows | None],
    ) -> None:
        """`rows`: the passage vectors held in memory while searches may use them, else None."""
        self._memories = memories
        self._chunks = chunks
        self._lexical = lexical
        self._passages = passages
        self._rows = rows
        self._waiting: list[tuple[Sequence[Item], list[bool]]] = []

    def add(self, items: Sequence[Item], behind: bool) -> None:
        """One keyword transaction, one Chroma call per collection: all stored or none. An item with
        one vector for several windows has its passages queued (`symbiote.storage.chroma.passages`).
        `behind`: the Chroma write is journalled in a durable transaction and left to `settle`."""
        if not items:
            return
        written = False
        held = self._passages.to_hold(self._rows(), items)
        try:
            with self._lexical.transaction(durable=behind) as tx:
                for (memory, vectors, windows), holding in zip(items, held):
                    tx.add(memory.memory_id, memory.created_us, memory.content)
                    if len(windows) > 1 and (holding or len(vectors) < len(windows)):
                        tx.queue_passages(memory.memory_id, windows)
                if behind:
                    self._lexical.unwritten.put(items)
                    self._waiting.append((items, held))
                else:
                    self._write(items, held)
                    written = True
        except BaseException:
            if written:  # the index commit failed after Chroma took the write: undo it
                self.delete_vectors([(m.memory_id, len(w)) for m, _v, w in items])
            raise

    def settle(self) -> None:
        """Write every waiting memory to Chroma, oldest first. One that fails stays in the journal
        (logged): the next open writes it, as after a crash."""
        while self._waiting:
            items, held = self._waiting.pop(0)
            ids = [memory.memory_id for memory, _v, _w in items]
            try:
                self._write(items, held)
            except Exception:
                log.exception("memories %s were not written to Chroma; the next open writes them from the journal", ids)
                continue
            self._lexical.unwritten.remove(ids)

    def replay(self) -> list[str]:
        """At open, before anything reads the store: write what a crash left in the journal (an
        upsert, so a row whose write landed before the crash is written again unchanged). Returns
        the ids written whose passages the caller queues again."""
        rows = self._lexical.unwritten.all()
        if not rows:
            return []
        ids = [mid for mid, _b, _m, _v in rows]
        self._memories.upsert(
            ids=ids,
            embeddings=[vector.tolist() for _i, _b, _m, vector in rows],
            documents=[body for _i, body, _m, _v in rows],
            metadatas=[meta for _i, _b, meta, _v in rows],
        )
        self._lexical.unwritten.remove(ids)
        log.warning("%d memories acknowledged before a crash were written to Chroma from the journal", len(ids))
        return [mid for mid, _b, meta, _v in rows if int(meta.get("windows", 1) or 1) > 1]

    def _write(self, items: Sequence[Item], held: list[bool]) -> None:
        """The memories to Chroma, with the passages neither queued nor `held`; then the `held`
        passages into memory (`DeferredPassages.hold`)."""
        chunk_ids_, chunk_vectors, chunk_docs, chunk_meta = passage_records(items, held)
        if chunk_ids_:
            self._chunks.add(ids=chunk_ids_, embeddings=chunk_vectors, documents=chunk_docs, metadatas=chunk_meta)
        try:
            self._memories.add(
                ids=[m.memory_id for m, _v, _w in items],
                embeddings=[v[0].tolist() for _m, v, _w in items],
                documents=[m.content for m, _v, _w in items],
                metadatas=[metadata_of(m, len(w)) for m, _v, w in items],
            )
        except BaseException:
            if chunk_ids_:
                self._chunks.delete(ids=chunk_ids_)
            raise
        self._passages.hold(self._rows(), items, held)

    def delete_vectors(self, memories: Sequence[tuple[str, int]]) -> None:
        """Chroma's records of these memories (id, number of passages), their passages' too."""
        self._memories.delete(ids=[mid for mid, _ in memories])
        chunks = [cid for mid, passages in memories for cid in chunk_ids(mid, passages)]
        if chunks:
            self._chunks.delete(ids=chunks)
