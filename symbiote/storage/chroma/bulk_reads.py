"""What is read from the store in bulk: every record of a collection in pages (`read_all`), a
filtered page of the memories newest first for the owner's console, and memories' stored vectors.

Reading every memory's metadata from Chroma to sort it costs time in proportion to the whole
store, so a page takes its order from the keyword index (`SideDatabase.newest`, where creation
time is indexed) and asks Chroma only for the ids a tag or type filter allows (ids only, no
metadata) and for the page's own memories.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from symbiote.storage.base import StoredMemory
from symbiote.storage.chroma.codec import memory_from
from symbiote.storage.filters import MemoryFilter

if TYPE_CHECKING:
    import numpy as np

    from symbiote.storage.chroma.side_database import SideDatabase


PAGE = 10_000  # records per Chroma read: one read of over 32,766 with metadata or text fails


def read_all(
    collection: Any, include: list[str], ids: Sequence[str] | None = None, where: Any = None
) -> dict[str, list[Any]]:
    """`collection.get(...)` in pages of PAGE records, merged. Chroma 1.5.9 turns a read of more
    records than SQLite's 32,766 variables, with their metadata or text, into "too many SQL
    variables", so a store past that size could not list, count or rebuild in one read."""
    merged: dict[str, list[Any]] = {"ids": [], **{key: [] for key in include}}

    def take(got: dict[str, Any]) -> int:
        merged["ids"] += list(got["ids"])
        for key in include:
            value = got.get(key)
            merged[key] += list(value) if value is not None else [None] * len(got["ids"])
        return len(got["ids"])

    if ids is not None:
        for start in range(0, len(ids), PAGE):
            take(collection.get(ids=list(ids[start : start + PAGE]), where=where, include=include))
        return merged
    offset = 0
    while take(collection.get(where=where, include=include, limit=PAGE, offset=offset)) == PAGE:
        offset += PAGE
    return merged


def chunk_ids(memory_id: str, passages: int) -> list[str]:
    """The records of a memory's extra passages (its first passage is the memory's own record)."""
    return [f"{memory_id}#{i}" for i in range(1, passages)]


class BulkReads:
    """The console's pages, the stored vectors and memories by their text, read from a store's two collections and its
    keyword index (`ChromaMemoryStore` holds one and hands it what it reads)."""

    def __init__(
        self, memories: Any, chunks: Any, lexical: SideDatabase, get: Callable[[Sequence[str]], dict[str, StoredMemory]]
    ) -> None:
        """`get`: the store's own read of whole memories by id."""
        self._memories = memories
        self._chunks = chunks
        self._lexical = lexical
        self.get = get

    def browse(self, where: MemoryFilter | None, offset: int, limit: int) -> tuple[list[StoredMemory], int]:
        """The memories matching `where`, newest first, from `offset`; and how many match in all."""
        where = where or MemoryFilter()
        among = None
        if where.tags or where.type is not None or where.min_confidence is not None:
            by_metadata = MemoryFilter(
                tags=where.tags,
                tag_mode=where.tag_mode,
                type=where.type,
                min_confidence=where.min_confidence,
                spellings=where.spellings,
            )
            among = self._memories.get(where=by_metadata.chroma_where(), include=[])["ids"]
        ids, total = self._lexical.newest(offset, limit, where.after_us, where.before_us, among)
        found = self.get(ids)
        return [found[mid] for mid in ids if mid in found], total

    def vectors(self, memory_ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Each memory's stored vectors: its whole text's first, then its passages' in order."""
        import numpy as np

        if not memory_ids:
            return {}
        got = read_all(self._memories, ["embeddings", "metadatas"], ids=list(memory_ids))
        heads = {
            mid: (vector, int((meta or {}).get("windows", 1) or 1))
            for mid, vector, meta in zip(got["ids"], got["embeddings"], got["metadatas"] or [])
        }
        wanted = [cid for mid, (_vector, passages) in heads.items() for cid in chunk_ids(mid, passages)]
        chunks: dict[str, Any] = {}
        if wanted:
            found = read_all(self._chunks, ["embeddings"], ids=wanted)
            chunks = dict(zip(found["ids"], found["embeddings"]))
        return {
            mid: np.asarray([vector, *(chunks[c] for c in chunk_ids(mid, passages) if c in chunks)], dtype=np.float32)
            for mid, (vector, passages) in heads.items()
        }

    def page(self, limit: int, before_us: int | None) -> list[StoredMemory]:
        """The newest `limit` memories created before `before_us`, newest first."""
        heads = read_all(self._memories, ["metadatas"], where=MemoryFilter(before_us=before_us).chroma_where())
        ordered = sorted(
            zip(heads["ids"], heads["metadatas"] or []),
            key=lambda pair: (int((pair[1] or {}).get("created_us", 0)), pair[0]),
            reverse=True,
        )[:limit]
        found = self.get([mid for mid, _ in ordered])
        return [found[mid] for mid, _ in ordered if mid in found]

    def scan(self, where: MemoryFilter | None = None) -> list[StoredMemory]:
        """Every (matching) memory without its content: for statistics and retention."""
        heads = read_all(self._memories, ["metadatas"], where=where.chroma_where() if where else None)
        return [memory_from(mid, None, meta) for mid, meta in zip(heads["ids"], heads["metadatas"] or [])]

    def by_content(self, hashes: Sequence[str]) -> dict[str, StoredMemory]:
        """Stored memories by content hash, one query for a whole batch; the newest holding each text."""
        got = self._memories.get(
            where={"content_hash": {"$in": list(dict.fromkeys(hashes))}}, include=["documents", "metadatas"]
        )
        found = [
            memory_from(mid, doc, meta)
            for mid, doc, meta in zip(got["ids"], got["documents"] or [], got["metadatas"] or [])
        ]
        return {m.content_hash: m for m in sorted(found, key=lambda m: m.created_us, reverse=True)}
