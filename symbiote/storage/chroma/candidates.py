"""A search's candidates in one call: the nearest memories and passages, the keyword matches, fused.

The vectors are searched where the store process holds them (`vectors`, numpy) or by Chroma (a
filter on tags, type or confidence; before they are read in). The keyword index (`keywords`) is
read in the caller's thread first, below `BESIDE_FROM` memories held: handing it to another thread
took longer than its reads do. From there, and whenever Chroma searches, it is read in a thread
beside the vectors' search: SQLite and numpy let go of the GIL while they work, Chroma's bindings
hold it for a whole call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from symbiote.storage.base import KeywordMatch, Match, StoredMemory
from symbiote.storage.chroma.codec import chroma_nearest
from symbiote.storage.chroma.side_database import SideDatabase
from symbiote.storage.chroma.vectors import VectorIndex
from symbiote.storage.filters import MemoryFilter
from symbiote.storage.fusion import Candidate, Fusion, fused, likely

if TYPE_CHECKING:
    import numpy as np

# From this many memories held, searching their vectors takes long enough (a millisecond or more of
# numpy) to hide the keyword reads' hand-off to a thread behind it (docs/performance.md, 2026-11-28).
BESIDE_FROM = 5_000


class CandidateSearch:
    """The store's searches by meaning and by keywords, over its collections (mirrored or not)."""

    def __init__(
        self,
        memories: Any,
        chunks: Any,
        vectors: VectorIndex | None,
        lexical: SideDatabase,
        get: Callable[[Sequence[str]], dict[str, StoredMemory]],
        keywords_current: Callable[[], object] = lambda: None,
    ) -> None:
        """`keywords_current`: brings the keyword index in step before any keyword read (on a Chroma
        server, with the other instances' writes: `symbiote.storage.chroma.server_store`)."""
        self._memories = memories
        self._chunks = chunks
        self._vectors = vectors
        self._lexical = lexical
        self._get = get
        self._keywords_current = keywords_current
        self._beside = ThreadPoolExecutor(1, thread_name_prefix="symbiote-keywords")

    def close(self) -> None:
        self._beside.shutdown(wait=True)

    def nearest(
        self, vector: np.ndarray, k: int, where: MemoryFilter | None = None, passages: bool = True
    ) -> list[Match]:
        in_memory = self._searched_here(where)
        after, before = (where.after_us, where.before_us) if where else (None, None)
        best: dict[str, float] = {}
        # Chroma returns what it has when asked for more (or none, empty): no count() first,
        # which cost two trips into Chroma per search. A passage's id is "<memory id>#<n>"
        # (`bulk_reads.chunk_ids`), so its owner needs no metadata fetch either (half the passage query).
        sources = [(self._memories, False, where.chroma_where() if where else None)]
        if passages:  # passages carry only the time; the engine re-checks the rest
            sources.append((self._chunks, True, where.chroma_where(with_metadata=False) if where else None))
        for collection, passage, condition in sources:
            if in_memory and collection.held:
                found = collection.rows.nearest(vector, k, after, before)
            else:
                found = chroma_nearest(collection, vector, k, condition, passage)
            for mid, similarity in found:
                if similarity > best.get(mid, -2.0):
                    best[mid] = similarity
        return sorted((Match(m, s) for m, s in best.items()), key=lambda m: m.similarity, reverse=True)

    def _searched_here(self, where: MemoryFilter | None) -> bool:
        """Whether `nearest` searches the vectors held here (numpy) rather than ask Chroma."""
        return self._vectors is not None and self._vectors.ready and (where is None or where.by_time_only)

    def keyword(self, text: str, k: int, where: MemoryFilter | None = None) -> list[KeywordMatch]:
        self._keywords_current()
        return self._keyword(text, k, where)

    def keyword_words(self, words: Sequence[str], k: int, where: MemoryFilter | None = None) -> list[KeywordMatch]:
        self._keywords_current()
        return self._keyword_words(words, k, where)

    def _keyword(self, text: str, k: int, where: MemoryFilter | None) -> list[KeywordMatch]:
        after, before = (where.after_us, where.before_us) if where else (None, None)
        return self._lexical.search(text, k, after, before)

    def _keyword_words(self, words: Sequence[str], k: int, where: MemoryFilter | None) -> list[KeywordMatch]:
        after, before = (where.after_us, where.before_us) if where else (None, None)
        return self._lexical.search_words(words, k, after, before, body_only=True)

    def search(
        self,
        vector: np.ndarray,
        text: str,
        k: int,
        topic_words: Sequence[str],
        topic_k: int,
        where: MemoryFilter | None,
        fusion: Fusion,
    ) -> tuple[list[Candidate], dict[str, StoredMemory], dict[str, np.ndarray]]:
        """A search's store work in one call, so one trip to the store process: candidates fused
        with the weights the search sent down, the records of the likely ones and, when it asks, the
        vectors held here of those (`VectorIndex.stored`)."""
        self._keywords_current()  # every keyword read below sees the index in step
        if self._searched_here(where) and len(self._memories.rows) < BESIDE_FROM:
            members = self._keyword_words(topic_words, topic_k, where) if topic_words else []
            keyword = self._keyword(text, k, where)
            nearest = self.nearest(vector, k, where)
        else:
            beside = self._beside.submit(self._keyword_words, topic_words, topic_k, where) if topic_words else None
            later = self._beside.submit(self._keyword, text, k, where)
            nearest = self.nearest(vector, k, where)
            keyword, members = later.result(), beside.result() if beside else []
        ranked = fused(nearest, keyword, members, fusion)
        records = self._get(likely(ranked, fusion.prefetch, fusion.pool))
        return ranked, records, self._held_vectors(records) if fusion.vectors else {}

    def _held_vectors(self, records: dict[str, StoredMemory]) -> dict[str, np.ndarray]:
        """The vectors held here of these memories, each with as many passages as its record says."""
        if self._vectors is None:
            return {}
        held = self._memories.records(list(records))  # just read: no query
        return self._vectors.stored({mid: int((meta or {}).get("windows", 1) or 1) for mid, (_d, meta) in held.items()})
