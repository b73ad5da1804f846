"""`MemoryStore` on Chroma (vectors, the source of truth) plus the FTS5 keyword index.

Takes any Chroma client, so the embedded `PersistentClient` and a Chroma server's `HttpClient`
are interchangeable. Calls block; the engine runs them in worker threads.

Layout: one record per memory in `venom_memories` (vector of the whole text, i.e. its first
256 tokens, exactly what sentence-transformers gives) plus, in `venom_memories_chunks`, one
record per extra passage (each sentence of a multi-sentence memory; paragraphs and 128-token
spans of a long one). Search keeps each memory's best passage.

Consistency: a store or delete changes Chroma and the keyword index together or not at all
(the index transaction commits only after the Chroma write succeeded; a failed commit undoes
the Chroma write). An index that is missing or disagrees with Chroma at open is rebuilt from
Chroma, which is the source of truth.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from symbiote.errors import StoreUnavailableError
from symbiote.lexical import KeywordMatch, LexicalIndex
from symbiote.storage import Match, StoredMemory

log = logging.getLogger(__name__)

MEMORY_COLLECTION = "venom_memories"
CHUNK_COLLECTION = "venom_memories_chunks"


def _time_filter(after_us: int | None, before_us: int | None) -> dict[str, Any] | None:
    clauses: list[dict[str, Any]] = []
    if after_us is not None:
        clauses.append({"created_us": {"$gte": after_us}})
    if before_us is not None:
        clauses.append({"created_us": {"$lt": before_us}})
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def _metadata(memory: StoredMemory, passages: int) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "timestamp": memory.timestamp,
        "created_us": memory.created_us,
        "content_hash": memory.content_hash,
        "windows": passages,
    }
    if memory.tags:  # Chroma rejects empty lists
        meta["tags"] = list(memory.tags)
    return meta


def _from_chroma(memory_id: str, document: str | None, meta: dict[str, Any] | None) -> StoredMemory:
    meta = meta or {}
    return StoredMemory(
        memory_id=memory_id,
        content=document or "",
        timestamp=str(meta.get("timestamp", "")),
        created_us=int(meta.get("created_us", 0)),
        tags=tuple(meta.get("tags") or ()),
        content_hash=str(meta.get("content_hash", "")),
    )


class ChromaMemoryStore:
    """Memories in two Chroma collections, keywords in a `LexicalIndex`."""

    def __init__(
        self, client: Any, model_name: str, dimension: int, lexical: LexicalIndex, data_path: Path | None = None
    ) -> None:
        self._client = client
        self._data_path = data_path
        self._lexical = lexical
        identity = {"embedding_model": model_name, "embedding_dim": dimension}
        config = {"hnsw": {"space": "cosine"}}
        self._memories = client.get_or_create_collection(
            MEMORY_COLLECTION, metadata=identity, configuration=config, embedding_function=None
        )
        self._check_identity(self._memories, model_name, dimension)
        self._chunks = client.get_or_create_collection(
            CHUNK_COLLECTION, metadata=identity, configuration=config, embedding_function=None
        )
        self._sync_lexical()

    @staticmethod
    def _check_identity(collection: Any, model_name: str, dimension: int) -> None:
        """Refuse data embedded by another model: mixing vector spaces silently ruins search."""
        meta = collection.metadata or {}
        space = ((collection.configuration or {}).get("hnsw") or {}).get("space", "cosine")
        stored_model, stored_dim = meta.get("embedding_model"), meta.get("embedding_dim")
        if space != "cosine":
            raise StoreUnavailableError(
                f"The collection {MEMORY_COLLECTION!r} uses {space!r} distance, but Symbiote needs cosine. "
                "Point CHROMADB_PATH at another directory."
            )
        if stored_model is None and stored_dim is None:
            # Written before the identity was recorded (e.g. by the seed prototype, which used the
            # same model through Chroma's default embedding function): adopt it.
            collection.modify(metadata={**meta, "embedding_model": model_name, "embedding_dim": dimension})
            return
        if stored_model != model_name or int(stored_dim or 0) != dimension:
            raise StoreUnavailableError(
                f"The memories in this store were embedded with {stored_model} ({stored_dim} dimensions), "
                f"but this server uses {model_name} ({dimension} dimensions); mixing them would make search "
                "meaningless. Point CHROMADB_PATH at the matching data, or at a new directory."
            )

    def _sync_lexical(self) -> None:
        """Rebuild the keyword index from Chroma when it is missing or out of step."""
        if self._lexical.count() == self._memories.count():
            return
        everything = self._memories.get(include=["documents", "metadatas"])
        rows = [
            (mid, int((meta or {}).get("created_us", 0)), doc or "")
            for mid, doc, meta in zip(everything["ids"], everything["documents"] or [], everything["metadatas"] or [])
        ]
        self._lexical.rebuild(rows)
        log.warning("keyword index rebuilt from Chroma (%d memories)", len(rows))

    # -- writes ----------------------------------------------------------------------------

    def add(self, memory: StoredMemory, vectors: np.ndarray, windows: Sequence[str]) -> None:
        written = False
        try:
            with self._lexical.transaction() as tx:
                tx.add(memory.memory_id, memory.created_us, memory.content)
                self._add_vectors(memory, vectors, windows)
                written = True
        except BaseException:
            if written:  # the index commit failed after Chroma took the write: undo it
                self._delete_vectors(memory.memory_id, len(windows))
            raise

    def _add_vectors(self, memory: StoredMemory, vectors: np.ndarray, windows: Sequence[str]) -> None:
        extra = len(windows) - 1
        chunk_ids = [f"{memory.memory_id}#{i}" for i in range(1, extra + 1)]
        if extra:
            self._chunks.add(
                ids=chunk_ids,
                embeddings=vectors[1:].tolist(),
                documents=list(windows[1:]),
                metadatas=[
                    {"memory_id": memory.memory_id, "window": i, "created_us": memory.created_us}
                    for i in range(1, extra + 1)
                ],
            )
        try:
            self._memories.add(
                ids=[memory.memory_id],
                embeddings=vectors[:1].tolist(),
                documents=[memory.content],
                metadatas=[_metadata(memory, len(windows))],
            )
        except BaseException:
            if extra:
                self._chunks.delete(ids=chunk_ids)
            raise

    def _delete_vectors(self, memory_id: str, windows: int) -> None:
        self._memories.delete(ids=[memory_id])
        if windows > 1:
            self._chunks.delete(ids=[f"{memory_id}#{i}" for i in range(1, windows)])

    def delete(self, memory_id: str) -> bool:
        got = self._memories.get(ids=[memory_id], include=["metadatas"])
        if not got["ids"]:
            return False
        windows = int((got["metadatas"] or [{}])[0].get("windows", 1) or 1)
        with self._lexical.transaction() as tx:
            tx.delete(memory_id)
            self._delete_vectors(memory_id, windows)
        return True

    # -- reads -----------------------------------------------------------------------------

    def get(self, memory_ids: Sequence[str]) -> dict[str, StoredMemory]:
        if not memory_ids:
            return {}
        got = self._memories.get(ids=list(memory_ids), include=["documents", "metadatas"])
        return {
            mid: _from_chroma(mid, doc, meta)
            for mid, doc, meta in zip(got["ids"], got["documents"] or [], got["metadatas"] or [])
        }

    def find_content(self, content_hash: str) -> StoredMemory | None:
        got = self._memories.get(where={"content_hash": content_hash}, limit=1, include=["documents", "metadatas"])
        if not got["ids"]:
            return None
        return _from_chroma(got["ids"][0], (got["documents"] or [None])[0], (got["metadatas"] or [None])[0])

    def nearest(
        self, vector: np.ndarray, k: int, after_us: int | None = None, before_us: int | None = None
    ) -> list[Match]:
        where = _time_filter(after_us, before_us)
        best: dict[str, float] = {}
        for collection, owner in ((self._memories, None), (self._chunks, "memory_id")):
            available = collection.count()
            if not available:
                continue
            found = collection.query(
                query_embeddings=[vector.tolist()],
                n_results=min(k, available),
                where=where,
                include=["distances", "metadatas"] if owner else ["distances"],
            )
            metas = (found.get("metadatas") or [[]])[0] or [None] * len(found["ids"][0])
            for rid, distance, meta in zip(found["ids"][0], found["distances"][0], metas):
                mid = str(meta[owner]) if owner and meta else rid
                similarity = 1.0 - float(distance)
                if similarity > best.get(mid, -2.0):
                    best[mid] = similarity
        return sorted((Match(m, s) for m, s in best.items()), key=lambda m: m.similarity, reverse=True)

    def keyword(
        self, text: str, k: int, after_us: int | None = None, before_us: int | None = None
    ) -> list[KeywordMatch]:
        return self._lexical.search(text, k, after_us, before_us)

    def keyword_words(
        self, words: Sequence[str], k: int, after_us: int | None = None, before_us: int | None = None
    ) -> list[KeywordMatch]:
        return self._lexical.search_words(words, k, after_us, before_us, body_only=True)

    def coverage(self, text: str, memory_ids: Sequence[str]) -> dict[str, float]:
        return self._lexical.coverage(text, memory_ids)

    def count(self) -> int:
        return int(self._memories.count())

    def page(self, limit: int, before_us: int | None) -> list[StoredMemory]:
        heads = self._memories.get(where=_time_filter(None, before_us), include=["metadatas"])
        ordered = sorted(
            zip(heads["ids"], heads["metadatas"] or []),
            key=lambda pair: (int((pair[1] or {}).get("created_us", 0)), pair[0]),
            reverse=True,
        )[:limit]
        found = self.get([mid for mid, _ in ordered])
        return [found[mid] for mid, _ in ordered if mid in found]

    def scan(self) -> list[StoredMemory]:
        """Every memory without its content (ids, timestamps, tags): for statistics."""
        heads = self._memories.get(include=["metadatas"])
        return [_from_chroma(mid, None, meta) for mid, meta in zip(heads["ids"], heads["metadatas"] or [])]

    def size_bytes(self) -> int:
        if self._data_path is None:
            return 0
        total = 0
        for root, _dirs, files in os.walk(self._data_path):
            for name in files:
                try:
                    total += os.path.getsize(os.path.join(root, name))
                except OSError:
                    pass
        return total
