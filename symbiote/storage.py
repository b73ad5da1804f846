"""Where memories live: a small synchronous interface and its Chroma implementation.

The engine talks only to `MemoryStore`. `ChromaMemoryStore` takes any Chroma client, so the
embedded `PersistentClient` (default) and a Chroma server's `HttpClient` are interchangeable.
Calls block; the engine runs them in worker threads.

Layout: one record per memory in `venom_memories` (its vector is the text's first 256-token
window, exactly what sentence-transformers would give), plus, for long memories only, one
record per paragraph-sized span in `venom_memories_chunks`. Search reads both and keeps the best
match per memory, so the end of a long memory stays findable.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, Sequence

import numpy as np

from symbiote.errors import StoreUnavailableError

log = logging.getLogger(__name__)

MEMORY_COLLECTION = "venom_memories"
CHUNK_COLLECTION = "venom_memories_chunks"


@dataclass(frozen=True)
class StoredMemory:
    """A memory as the store holds it (no vector)."""

    memory_id: str
    content: str
    timestamp: str
    created_us: int
    tags: tuple[str, ...]


@dataclass(frozen=True)
class Match:
    memory_id: str
    similarity: float  # cosine similarity of the best-matching window, -1..1


class MemoryStore(Protocol):
    """The storage operations the engine needs; nothing Chroma-specific leaks through."""

    def add(self, memory: StoredMemory, vectors: np.ndarray, windows: Sequence[str]) -> None: ...

    def get(self, memory_ids: Sequence[str]) -> dict[str, StoredMemory]: ...

    def nearest(self, vector: np.ndarray, k: int) -> list[Match]: ...

    def delete(self, memory_id: str) -> bool: ...

    def count(self) -> int: ...

    def page(self, limit: int, before_us: int | None) -> list[StoredMemory]: ...

    def scan(self) -> list[StoredMemory]: ...

    def size_bytes(self) -> int: ...


def _metadata(memory: StoredMemory) -> dict[str, Any]:
    meta: dict[str, Any] = {"timestamp": memory.timestamp, "created_us": memory.created_us}
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
    )


class ChromaMemoryStore:
    """`MemoryStore` over two Chroma collections (memories and long-text windows)."""

    def __init__(self, client: Any, model_name: str, dimension: int, data_path: Path | None = None) -> None:
        self._client = client
        self._data_path = data_path
        identity = {"embedding_model": model_name, "embedding_dim": dimension}
        config = {"hnsw": {"space": "cosine"}}
        self._memories = client.get_or_create_collection(
            MEMORY_COLLECTION, metadata=identity, configuration=config, embedding_function=None
        )
        self._check_identity(self._memories, model_name, dimension)
        self._chunks = client.get_or_create_collection(
            CHUNK_COLLECTION, metadata=identity, configuration=config, embedding_function=None
        )

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

    def add(self, memory: StoredMemory, vectors: np.ndarray, windows: Sequence[str]) -> None:
        # Later windows first: if the main record then fails, the orphans are harmless (search
        # resolves windows through the main record) and are removed right away.
        extra = len(windows) - 1
        chunk_ids = [f"{memory.memory_id}#{i}" for i in range(1, extra + 1)]
        if extra:
            self._chunks.add(
                ids=chunk_ids,
                embeddings=vectors[1:].tolist(),
                documents=list(windows[1:]),
                metadatas=[{"memory_id": memory.memory_id, "window": i} for i in range(1, extra + 1)],
            )
        try:
            self._memories.add(
                ids=[memory.memory_id],
                embeddings=vectors[:1].tolist(),
                documents=[memory.content],
                metadatas=[_metadata(memory) | {"windows": len(windows)}],
            )
        except BaseException:
            if extra:
                self._chunks.delete(ids=chunk_ids)
            raise

    def get(self, memory_ids: Sequence[str]) -> dict[str, StoredMemory]:
        if not memory_ids:
            return {}
        got = self._memories.get(ids=list(memory_ids), include=["documents", "metadatas"])
        return {
            mid: _from_chroma(mid, doc, meta)
            for mid, doc, meta in zip(got["ids"], got["documents"] or [], got["metadatas"] or [])
        }

    def nearest(self, vector: np.ndarray, k: int) -> list[Match]:
        best: dict[str, float] = {}
        for collection, owner in ((self._memories, None), (self._chunks, "memory_id")):
            available = collection.count()
            if not available:
                continue
            found = collection.query(
                query_embeddings=[vector.tolist()],
                n_results=min(k, available),
                include=["distances", "metadatas"] if owner else ["distances"],
            )
            metas = (found.get("metadatas") or [[]])[0] or [None] * len(found["ids"][0])
            for rid, distance, meta in zip(found["ids"][0], found["distances"][0], metas):
                mid = str(meta[owner]) if owner and meta else rid
                similarity = 1.0 - float(distance)
                if similarity > best.get(mid, -2.0):
                    best[mid] = similarity
        return sorted((Match(m, s) for m, s in best.items()), key=lambda m: m.similarity, reverse=True)

    def delete(self, memory_id: str) -> bool:
        got = self._memories.get(ids=[memory_id], include=["metadatas"])
        if not got["ids"]:
            return False
        windows = int((got["metadatas"] or [{}])[0].get("windows", 1) or 1)
        self._memories.delete(ids=[memory_id])
        if windows > 1:
            self._chunks.delete(ids=[f"{memory_id}#{i}" for i in range(1, windows)])
        return True

    def count(self) -> int:
        return int(self._memories.count())

    def page(self, limit: int, before_us: int | None) -> list[StoredMemory]:
        where = {"created_us": {"$lt": before_us}} if before_us is not None else None
        heads = self._memories.get(where=where, include=["metadatas"])
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


def open_embedded_store(path: Path, model_name: str, dimension: int) -> ChromaMemoryStore:
    """Open (creating if needed) the embedded Chroma store at `path`, telemetry off."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".symbiote-write-test"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise StoreUnavailableError(
            f"The memory store directory {str(path)!r} is not writable ({exc.strerror or exc}). "
            "Fix its permissions or set CHROMADB_PATH to a writable directory."
        ) from exc
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    client = chromadb.PersistentClient(
        path=str(path), settings=ChromaSettings(anonymized_telemetry=False, allow_reset=False)
    )
    return ChromaMemoryStore(client, model_name, dimension, data_path=path)
