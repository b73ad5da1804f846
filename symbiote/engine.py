"""The memory engine: validation, ids, embedding and scoring over a `MemoryStore`.

It knows nothing of MCP or HTTP; every surface (MCP tools, resources, health) calls it. The
store is opened lazily on the first memory operation (or by `warm_up()` in the background), so
a server answers `initialize` before Chroma and the model have loaded. A store that cannot be
opened is not fatal: each call reports why and tries again, so fixing a permission does not
need a restart. All blocking work runs in worker threads.
"""

from __future__ import annotations

import asyncio
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from typing import Any, Callable, Sequence, TypeVar

from symbiote import validation
from symbiote.embedder import AsyncEmbedder
from symbiote.embeddings import MODEL_DIMENSION, MODEL_NAME
from symbiote.errors import MemoryNotFoundError, StoreUnavailableError, SymbioteError
from symbiote.ids import IdGenerator
from symbiote.keyed_lock import KeyedLock
from symbiote.lexical import KeywordMatch
from symbiote.ranking import Candidate, QueryEvidence, fuse, relevance_scores
from symbiote.records import (
    DeleteResult,
    Memory,
    MemoryPage,
    MemoryStats,
    NearDuplicate,
    SearchHit,
    SearchResults,
    StoreResult,
)
from symbiote.storage import MemoryStore, StoredMemory, content_hash
from symbiote.topics import TopicIndex

log = logging.getLogger(__name__)
T = TypeVar("T")

RELEVANCE_CUTOFF = 30.0
CANDIDATES = 50  # per retriever, before fusion
TOPIC_CANDIDATES = 10  # memories carrying a vague question's topic words that join the candidates
TOPIC_MEMBERSHIP = 0.5  # how strongly a keyword match makes a memory a member of a topic
NEAR_DUPLICATE = 0.92  # cosine at or above which a new memory is reported as a near-duplicate


def iso_utc(micros: int) -> str:
    return datetime.fromtimestamp(micros / 1e6, tz=timezone.utc).isoformat(timespec="microseconds").replace(
        "+00:00", "Z"
    )


def _public(memory: StoredMemory) -> Memory:
    return Memory(memory_id=memory.memory_id, content=memory.content, timestamp=memory.timestamp, tags=list(memory.tags))


class _Timer:
    """Running mean of an operation's latency, for memory_stats."""

    def __init__(self) -> None:
        self.count = 0
        self.total_ms = 0.0

    def add(self, started: float) -> None:
        self.count += 1
        self.total_ms += (time.perf_counter() - started) * 1000

    @property
    def mean_ms(self) -> float | None:
        return round(self.total_ms / self.count, 2) if self.count else None


class MemoryEngine:
    """Stores, finds, lists and deletes memories. Safe to share between any number of clients."""

    def __init__(self, embedder: AsyncEmbedder, open_store: Callable[[str, int], MemoryStore]) -> None:
        self._embedder = embedder
        self._open_store = open_store
        self._store: MemoryStore | None = None
        self._store_error: str | None = None
        self._open_lock = asyncio.Lock()
        self._io = ThreadPoolExecutor(max_workers=4, thread_name_prefix="store")
        self._ids = IdGenerator()
        self._same_content = KeyedLock()
        self._topics: TopicIndex | None = None
        self._store_timer = _Timer()
        self._search_timer = _Timer()

    # -- lifecycle -------------------------------------------------------------------------

    async def warm_up(self) -> None:
        """Open the store and load the model now rather than on the first request."""
        results = await asyncio.gather(self._store_or_raise(), self._topic_index(), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                log.warning("memory warm-up incomplete: %s", result)

    def status(self) -> dict[str, Any]:
        """Health facts without touching the disk: ready, starting, or unavailable (and why)."""
        if self._store is not None:
            return {"store": "ready", "model_loaded": self._embedder.loaded}
        if self._store_error:
            return {"store": "unavailable", "error": self._store_error, "model_loaded": self._embedder.loaded}
        return {"store": "not_opened", "model_loaded": self._embedder.loaded}

    async def count(self) -> int | None:
        """Number of memories, or None when the store is not open."""
        if self._store is None:
            return None
        try:
            return await self._run(self._store.count)
        except Exception:  # health must never fail because of a count
            log.exception("counting memories failed")
            return None

    def close(self) -> None:
        self._io.shutdown(wait=True)
        self._embedder.close()

    # -- operations ------------------------------------------------------------------------

    async def store(self, content: Any, tags: Any = None) -> StoreResult:
        started = time.perf_counter()
        text = validation.content(content)
        labels = validation.tags(tags)
        store = await self._store_or_raise()
        digest = content_hash(text)
        async with self._same_content.hold(digest):  # two identical stores at once make one memory
            existing = await self._read(store.find_content, digest)
            if existing is not None:
                return StoreResult(
                    memory_id=existing.memory_id,
                    timestamp=existing.timestamp,
                    tags=list(existing.tags),
                    status="duplicate",
                    message=f"Already remembered: identical content is stored as {existing.memory_id}; no copy made.",
                )
            windows = await self._embedder.windows(text)
            vectors = await self._embedder.embed(windows)
            near = await self._near_duplicates(store, vectors[0])
            memory_id = self._ids.new()
            created_us = int(memory_id[4:20])
            memory = StoredMemory(memory_id, text, iso_utc(created_us), created_us, tuple(labels), digest)
            await self._write(store.add, memory, vectors, windows)
        self._store_timer.add(started)
        message = "Memory stored."
        if near:
            message += f" {len(near)} existing memory(ies) say nearly the same; see near_duplicates."
        return StoreResult(
            memory_id=memory_id, timestamp=memory.timestamp, tags=labels, status="stored", near_duplicates=near,
            message=message,
        )

    async def _near_duplicates(self, store: MemoryStore, vector: Any) -> list[NearDuplicate]:
        close = [m for m in await self._read(store.nearest, vector, 3) if m.similarity >= NEAR_DUPLICATE]
        if not close:
            return []
        found = await self._read(store.get, [m.memory_id for m in close])
        return [
            NearDuplicate(memory_id=m.memory_id, content=found[m.memory_id].content, similarity=round(m.similarity, 3))
            for m in close
            if m.memory_id in found
        ]

    async def search(
        self,
        query: Any,
        limit: Any = 5,
        min_relevance: Any = None,
        after: Any = None,
        before: Any = None,
        when: Any = None,
    ) -> SearchResults:
        started = time.perf_counter()
        text = validation.query(query)
        count = validation.limit(limit, name="limit", high=20)
        cutoff = validation.min_relevance(min_relevance, RELEVANCE_CUTOFF)
        after_us, before_us = validation.time_window(after, before, when)
        candidates, evidence = await self.rank(text, after_us, before_us)
        scored = list(zip(candidates, relevance_scores(candidates, evidence)))
        scored.sort(key=lambda pair: pair[1], reverse=True)  # stable: equal scores keep the fused order
        kept = [(c, score) for c, score in scored if score >= cutoff][: count * 2]
        found = await self._read((await self._store_or_raise()).get, [c.memory_id for c, _ in kept])
        hits: list[SearchHit] = []
        seen: set[str] = set()
        for candidate, score in kept:
            memory = found.get(candidate.memory_id)
            if memory is None:
                continue
            digest = memory.content_hash or content_hash(memory.content)
            if digest in seen:  # never the same content twice
                continue
            seen.add(digest)
            hits.append(
                SearchHit(
                    **_public(memory).model_dump(),
                    relevance_score=score,
                    matched_by=candidate.matched_by,
                )
            )
            if len(hits) == count:
                break
        self._search_timer.add(started)
        message = (
            f"{len(hits)} relevant {'memory' if len(hits) == 1 else 'memories'}."
            if hits
            else f"No stored memory is relevant to this query (none scored {cutoff:g} or more)."
        )
        return SearchResults(query=text, results=hits, count=len(hits), message=message)

    async def rank(
        self, text: str, after_us: int | None = None, before_us: int | None = None
    ) -> tuple[list[Candidate], QueryEvidence]:
        """All candidates for a query, best first, and the query-level evidence for scoring them."""
        store, vectors, topics = await asyncio.gather(
            self._store_or_raise(), self._embedder.embed([text]), self._topic_index()
        )
        topic = topics.match(vectors[0])
        no_members: list[KeywordMatch] = []
        dense, keyword, members = await asyncio.gather(
            self._read(store.nearest, vectors[0], CANDIDATES, after_us, before_us),
            self._read(store.keyword, text, CANDIDATES, after_us, before_us),
            self._read(store.keyword_words, topic.keywords, TOPIC_CANDIDATES, after_us, before_us)
            if topic
            else asyncio.sleep(0, no_members),
        )
        candidates = fuse(dense, keyword, members)
        if not candidates:
            return [], QueryEvidence(0.0, 0.0, 0.0)
        shown = [c.memory_id for c in candidates[:10]]
        coverage = await self._read(store.coverage, text, shown)
        evidence = QueryEvidence(
            top_cosine=max((m.similarity for m in dense), default=0.0),
            coverage=max(coverage.values(), default=0.0),
            topic=topic.activation * TOPIC_MEMBERSHIP if topic and candidates[0].topic else 0.0,
            activation=topic.activation if topic else 0.0,
        )
        return candidates, evidence

    async def _topic_index(self) -> TopicIndex:
        if self._topics is None:
            self._topics = TopicIndex(await self._embedder.embed(TopicIndex.questions()))
        return self._topics

    async def get(self, memory_id: Any) -> Memory:
        mid = validation.memory_id(memory_id)
        store = await self._store_or_raise()
        found = await self._read(store.get, [mid])
        if mid not in found:
            raise MemoryNotFoundError(mid)
        return _public(found[mid])

    async def delete(self, memory_id: Any) -> DeleteResult:
        mid = validation.memory_id(memory_id)
        store = await self._store_or_raise()
        if not await self._write(store.delete, mid):
            raise MemoryNotFoundError(mid)
        return DeleteResult(memory_id=mid, deleted=True, message="Memory deleted permanently.")

    async def list_memories(self, limit: Any = 10, before: Any = None) -> MemoryPage:
        count = validation.limit(limit, name="limit", high=50)
        before_us = validation.before(before)
        store = await self._store_or_raise()
        page = await self._read(store.page, count + 1, before_us)
        more = len(page) > count
        page = page[:count]
        return MemoryPage(
            memories=[_public(m) for m in page],
            count=len(page),
            next_before=page[-1].memory_id if more and page else None,
        )

    async def stats(self) -> MemoryStats:
        store = await self._store_or_raise()
        heads, size = await asyncio.gather(self._read(store.scan), self._read(store.size_bytes))
        share_usage = getattr(store, "share_usage", None)  # symbiote.snapshots.GuardedStore on a file share
        share = await self._read(share_usage) if callable(share_usage) else None
        tag_counts: dict[str, int] = {}
        for memory in heads:
            for tag in memory.tags:
                tag_counts[tag] = tag_counts.get(tag, 0) + 1
        top = dict(sorted(tag_counts.items(), key=lambda kv: (-kv[1], kv[0]))[:10])
        stamps = sorted(m.created_us for m in heads)
        return MemoryStats(
            total_memories=len(heads),
            oldest_timestamp=iso_utc(stamps[0]) if stamps else None,
            newest_timestamp=iso_utc(stamps[-1]) if stamps else None,
            top_tags=top,
            storage_mb=round(size / 1_048_576, 3),
            embedding_model=MODEL_NAME,
            embedding_dimension=MODEL_DIMENSION,
            avg_store_ms=self._store_timer.mean_ms,
            avg_search_ms=self._search_timer.mean_ms,
            share=share,
        )

    # -- plumbing --------------------------------------------------------------------------

    async def _store_or_raise(self) -> MemoryStore:
        if self._store is not None:
            return self._store
        async with self._open_lock:
            if self._store is None:
                try:
                    self._store = await self._run(self._open_store, MODEL_NAME, MODEL_DIMENSION)
                    self._store_error = None
                    log.info("memory store opened")
                except SymbioteError as exc:
                    self._store_error = str(exc)
                    log.error("memory store unavailable: %s", exc)
                    raise
                except Exception as exc:
                    self._store_error = f"The memory store could not be opened: {exc}"
                    log.exception("memory store unavailable")
                    raise StoreUnavailableError(self._store_error) from exc
        return self._store

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._io, fn, *args)

    async def _read(self, fn: Callable[..., T], *args: Any) -> T:
        try:
            return await self._run(fn, *args)
        except SymbioteError:
            raise
        except Exception as exc:
            log.exception("memory read failed")
            raise StoreUnavailableError(f"Reading the memory store failed: {exc}") from exc

    async def _write(self, fn: Callable[..., T], *args: Any) -> T:
        # A store on a shared file system (symbiote.snapshots.GuardedStore) needs every write
        # to hold the writer lease and pass the snapshot gate; it offers `writing()` for that.
        writing = getattr(self._store, "writing", None)

        def guarded() -> T:
            if writing is None:
                return fn(*args)
            with writing():
                return fn(*args)

        try:
            return await self._run(guarded)
        except SymbioteError:
            raise
        except Exception as exc:
            log.exception("memory write failed")
            raise StoreUnavailableError(
                f"Saving to the memory store failed ({exc}); nothing was changed. "
                "Check that the disk has space and CHROMADB_PATH is writable."
            ) from exc
