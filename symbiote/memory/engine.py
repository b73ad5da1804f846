"""The memory engine: validation, ids, embedding, policy and scoring over a `MemoryStore`.

It knows nothing of MCP or HTTP; every surface (MCP tools, resources, health) calls it. The
store is opened lazily on the first memory operation (or by `warm_up()` in the background), so
a server answers `initialize` before Chroma and the model have loaded. A store that cannot be
opened is not fatal: each call reports why and tries again, so fixing a permission does not
need a restart (a damaged store is the exception: it waits for an operator). All blocking
work runs in worker threads.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any, Callable, Sequence, TypeVar

from symbiote.memory import validation
from symbiote.embedding.embedder import AsyncEmbedder
from symbiote.storage.diskspace import DiskSpace
from symbiote.embedding import MODEL_DIMENSION, MODEL_NAME
from symbiote.errors import InvalidInputError, MemoryNotFoundError, StoreUnavailableError, SymbioteError
from symbiote.storage.disk_errors import StoreDamagedError, is_transient, write_failure
from symbiote.storage.filters import MemoryFilter
from symbiote.memory.ids import IdGenerator
from symbiote.memory.keyed_lock import KeyedLock
from symbiote.storage.keywords import KeywordMatch
from symbiote.workers import PriorityExecutor
from symbiote.retrieval.ranking import Candidate, QueryEvidence, fuse, relevance_scores
from symbiote.memory.records import (
    BatchStoreResult,
    DeleteResult,
    Memory,
    MemoryPage,
    MemoryStats,
    NearDuplicate,
    RetentionResult,
    SearchHit,
    SearchResults,
    StoreResult,
    UpdateResult,
)
from symbiote.storage.base import MemoryStore, StoredMemory, content_hash
from symbiote.memory.summary import Summary
from symbiote.retrieval.topics import TopicIndex

log = logging.getLogger(__name__)
T = TypeVar("T")

RELEVANCE_CUTOFF = 30.0
CANDIDATES = 50  # per retriever, before fusion
TOPIC_CANDIDATES = 10  # memories carrying a vague question's topic words that join the candidates
TOPIC_MEMBERSHIP = 0.5  # how strongly a keyword match makes a memory a member of a topic
NEAR_DUPLICATE = 0.92  # cosine at or above which a new memory is reported as a near-duplicate
QUOTA_WARNING = 0.9
WRITE_RETRIES = 3  # transient lock contention: retried this many times, backing off exponentially
RETRY_BASE_SECONDS = 0.05
RETENTION_INTERVAL_SECONDS = 24 * 3600
SUMMARY_TTL_SECONDS = 30.0


class QuotaExceededError(SymbioteError):
    """MAX_MEMORIES is reached; nothing is ever evicted to make room."""


class PolicyRefusedError(InvalidInputError):
    """The write policy for memories drawn from a conversation refused this one."""


@dataclass(frozen=True)
class EnginePolicy:
    """Limits and policy from configuration (MAX_MEMORIES, RETENTION_DAYS, MEMORY_*)."""

    max_memories: int | None = None
    retention_days: int | None = None
    confidence_min: float = 0.7
    max_per_window: int = 3
    window_minutes: int = 60


def iso_utc(micros: int) -> str:
    return datetime.fromtimestamp(micros / 1e6, tz=timezone.utc).isoformat(timespec="microseconds").replace(
        "+00:00", "Z"
    )


def _now_us() -> int:
    return time.time_ns() // 1000


def _public(memory: StoredMemory) -> Memory:
    return Memory(
        memory_id=memory.memory_id,
        content=memory.content,
        timestamp=memory.timestamp,
        tags=list(memory.tags),
        type=memory.type,
        confidence=memory.confidence,
        bookmarked=memory.bookmarked,
        updated_at=iso_utc(memory.updated_us) if memory.updated_us else None,
    )


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
    """Stores, finds, lists, updates and deletes memories. Safe to share between any number of clients."""

    def __init__(
        self,
        embedder: AsyncEmbedder,
        open_store: Callable[[str, int], MemoryStore],
        policy: EnginePolicy | None = None,
        space: DiskSpace | None = None,
        on_close: Callable[[], None] | None = None,
        store_exists: Callable[[], bool] | None = None,
    ) -> None:
        """`store_exists` (blocking; may raise a SymbioteError saying the store cannot be created):
        given, the warm-up opens only a store that exists, and creating one waits for the first
        memory operation."""
        self._embedder = embedder
        self._store_exists = store_exists
        self._absent = False  # the warm-up found no store yet: none is created until it is used
        self._space = space
        self._on_close = on_close  # e.g. end the memory store's process (symbiote.storage.process)
        self._open_store = open_store
        self.policy = policy or EnginePolicy()
        self._store: MemoryStore | None = None
        self._store_error: str | None = None
        self._damaged: StoreDamagedError | None = None
        self._open_lock = asyncio.Lock()
        # reads someone waits on go first, and one write at a time leaves the rest free (symbiote.workers)
        self._io = PriorityExecutor(4, "store", background_limit=1)
        self._ids = IdGenerator()
        self._same_content = KeyedLock()
        self._topics: TopicIndex | None = None
        self._summary: Summary | None = None  # built by one scan, then kept current by this instance's writes
        self._summary_refresh: asyncio.Task[Summary | None] | None = None
        self._writes = 0  # bumped by every write this instance makes
        self._store_timer = _Timer()
        self._search_timer = _Timer()

    # -- lifecycle -------------------------------------------------------------------------

    async def warm_up(self) -> None:
        """Open the store (if it exists yet) and load the model now rather than on the first request.

        With RETENTION_DAYS set it then stays on as the daily retention cleanup (cancel it at shutdown).
        """
        results = await asyncio.gather(self._open_if_created(), self._topic_index(), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                log.warning("memory warm-up incomplete: %s", result)
        while self.policy.retention_days is not None and self._store is not None:
            try:
                await self.apply_retention()
            except SymbioteError as exc:
                log.error("retention cleanup failed: %s", exc)
            await asyncio.sleep(RETENTION_INTERVAL_SECONDS)

    async def _open_if_created(self) -> None:
        """Open the store if it exists. Chroma creates one only on the first memory operation;
        one that could not be created is reported now (health), without creating anything."""
        if self._store_exists is not None and self._store is None:
            try:
                exists = await self._run(self._store_exists)
            except SymbioteError as exc:
                self._store_error = str(exc)
                log.error("memory store unavailable: %s", exc)
                return
            if not exists:
                self._absent = True
                log.info("no memory store yet: it is created on the first memory operation")
                return
        await self._store_or_raise()

    def status(self) -> dict[str, Any]:
        """Health facts without touching the disk: ready, not created yet, starting, or unavailable (and why)."""
        if self._store is not None:
            return {"store": "ready", "model_loaded": self._embedder.loaded}
        if self._store_error:
            return {"store": "unavailable", "error": self._store_error, "model_loaded": self._embedder.loaded}
        if self._absent:
            return {"store": "not_created", "model_loaded": self._embedder.loaded}
        return {"store": "not_opened", "model_loaded": self._embedder.loaded}

    async def count(self) -> int | None:
        """Number of memories: 0 before the store is created, None while it cannot be read. For
        health: never queued behind writes."""
        if self._store is None:
            return 0 if self._absent and not self._store_error else None
        try:
            return await self._run(self._store.count, urgent=True)
        except Exception:  # health must never fail because of a count
            log.exception("counting memories failed")
            return None

    def close(self) -> None:
        self._io.shutdown(wait=True)
        self._embedder.close()
        if self._on_close is not None:
            self._on_close()

    # -- writes ----------------------------------------------------------------------------

    async def store(
        self,
        content: Any,
        tags: Any = None,
        type: Any = None,  # noqa: A002 - the tool's argument name
        confidence: Any = None,
        conversation_id: Any = None,
        bookmarked: Any = False,
    ) -> StoreResult:
        started = time.perf_counter()
        draft = self._draft(content, tags, type, confidence, conversation_id, bookmarked)
        store = await self._store_or_raise()
        await self._check_policy(store, draft)
        async with self._same_content.hold(draft.content_hash):  # two identical stores at once make one memory
            existing = await self._read(store.find_content, draft.content_hash, urgent=False)
            if existing is not None:
                return StoreResult(
                    memory_id=existing.memory_id,
                    timestamp=existing.timestamp,
                    tags=list(existing.tags),
                    status="duplicate",
                    message=f"Already remembered: identical content is stored as {existing.memory_id}; no copy made.",
                )
            warning = await self._check_quota(store, 1)
            windows = await self._embedder.windows(draft.content)
            await self._ensure_space(windows)
            vectors = await self._embedder.embed(windows)
            near = await self._near_duplicates(store, vectors[0])
            memory = self._stamp(draft)
            await self._write(store.add, memory, vectors, windows)
            if self._summary is not None:
                self._summary.add(memory)
        self._store_timer.add(started)
        message = "Memory stored."
        if near:
            message += f" {len(near)} existing memory(ies) say nearly the same; see near_duplicates."
        if warning:
            message += f" {warning}"
        return StoreResult(
            memory_id=memory.memory_id,
            timestamp=memory.timestamp,
            tags=list(memory.tags),
            status="stored",
            near_duplicates=near,
            warning=warning,
            message=message,
        )

    async def store_many(self, items: Any) -> BatchStoreResult:
        """Store a batch: every item valid or none stored; one embedding pass, one write."""
        entries = validation.batch(items)
        drafts: list[StoredMemory] = []
        for position, item in enumerate(entries, start=1):
            try:
                drafts.append(
                    self._draft(
                        item.get("content"),
                        item.get("tags"),
                        item.get("type"),
                        item.get("confidence"),
                        item.get("conversation_id"),
                        item.get("bookmarked", False),
                    )
                )
            except InvalidInputError as exc:
                raise InvalidInputError(f"item {position}: {exc} Nothing was stored.") from None
        store = await self._store_or_raise()
        existing = await self._read(store.find_contents, [d.content_hash for d in drafts], urgent=False)
        fresh: dict[str, StoredMemory] = {}
        for draft in drafts:
            if draft.content_hash not in existing:
                fresh.setdefault(draft.content_hash, draft)
        warning = await self._check_quota(store, len(fresh))
        windows = [await self._embedder.windows(d.content) for d in fresh.values()]
        flat = [text for group in windows for text in group]
        await self._ensure_space(flat)
        vectors = await self._embedder.embed(flat)
        stamped = {digest: self._stamp(d) for digest, d in fresh.items()}
        batch = []
        offset = 0
        for (digest, memory), group in zip(stamped.items(), windows):
            batch.append((memory, vectors[offset : offset + len(group)], group))
            offset += len(group)
        await self._write(store.add_many, batch)
        if self._summary is not None:
            for memory, _vectors, _windows in batch:
                self._summary.add(memory)
        results = []
        for draft in drafts:
            if draft.content_hash in existing:
                old = existing[draft.content_hash]
                results.append(
                    StoreResult(
                        memory_id=old.memory_id, timestamp=old.timestamp, tags=list(old.tags), status="duplicate",
                        message="Already remembered; no copy made.",
                    )
                )
            else:
                memory = stamped[draft.content_hash]
                first = fresh[draft.content_hash] is draft
                results.append(
                    StoreResult(
                        memory_id=memory.memory_id, timestamp=memory.timestamp, tags=list(memory.tags),
                        status="stored" if first else "duplicate",
                        message="Memory stored." if first else "Repeated within the batch; stored once.",
                    )
                )
        stored = len(batch)
        message = f"{stored} stored, {len(drafts) - stored} already remembered."
        if warning:
            message += f" {warning}"
        return BatchStoreResult(results=results, stored=stored, duplicates=len(drafts) - stored, warning=warning, message=message)

    async def update(
        self,
        memory_id: Any,
        content: Any = None,
        tags: Any = None,
        type: Any = None,  # noqa: A002
        confidence: Any = None,
        bookmarked: Any = None,
    ) -> UpdateResult:
        """Change a memory in place: same id and original timestamp; new text is re-embedded."""
        mid = validation.memory_id(memory_id)
        store = await self._store_or_raise()
        found = await self._read(store.get, [mid])
        if mid not in found:
            raise MemoryNotFoundError(mid)
        old = found[mid]
        changes: dict[str, Any] = {}
        if content is not None:
            text = validation.content(content)
            if text != old.content:
                changes["content"] = text
                changes["content_hash"] = content_hash(text)
        if tags is not None:
            changes["tags"] = tuple(validation.tags(tags))
        if type is not None:
            changes["type"] = validation.memory_type(type)
        if confidence is not None:
            changes["confidence"] = validation.confidence(confidence)
        if bookmarked is not None:
            changes["bookmarked"] = validation.flag(bookmarked, "bookmarked")
        if not changes:
            return UpdateResult(memory=_public(old), reembedded=False, message="Nothing to change.")
        memory = replace(old, updated_us=_now_us(), **changes)
        if "content" in changes:
            windows = await self._embedder.windows(memory.content)
            await self._ensure_space(windows)
            vectors = await self._embedder.embed(windows)
            await self._write(store.replace, memory, vectors, windows)
        else:
            await self._ensure_space([""])
            await self._write(store.replace, memory, None, [])
        if self._summary is not None:
            self._summary.replace(old, memory)
        return UpdateResult(
            memory=_public(memory),
            reembedded="content" in changes,
            message="Memory updated" + (" and re-indexed." if "content" in changes else "."),
        )

    async def delete(self, memory_id: Any) -> DeleteResult:
        mid = validation.memory_id(memory_id)
        store = await self._store_or_raise()
        # what it was, for the statistics (only once they have been counted)
        found = await self._read(store.get, [mid], urgent=False) if self._summary is not None else {}
        if not await self._write(store.delete, mid):
            raise MemoryNotFoundError(mid)
        if self._summary is not None and mid in found:
            self._summary.remove(found[mid])
        return DeleteResult(memory_id=mid, deleted=True, message="Memory deleted permanently.")

    async def apply_retention(self) -> RetentionResult:
        """Delete memories older than RETENTION_DAYS in one batch, never bookmarked ones. Off by default."""
        days = self.policy.retention_days
        if days is None:
            return RetentionResult(removed=0, kept_bookmarked=0, message="Retention is off: memories are kept forever.")
        store = await self._store_or_raise()
        cutoff = _now_us() - days * 86_400 * 1_000_000
        old = await self._read(store.scan, MemoryFilter(before_us=cutoff), urgent=False)
        keep = [m for m in old if m.bookmarked]
        doomed = [m.memory_id for m in old if not m.bookmarked]
        removed = await self._write(store.delete_many, doomed) if doomed else []
        if self._summary is not None:
            heads = {m.memory_id: m for m in old}
            for mid in removed:
                self._summary.remove(heads[mid])
        log.info(
            "retention (%d days): removed %d memories, skipped %d bookmarked: removed=%s skipped=%s",
            days, len(removed), len(keep), removed, [m.memory_id for m in keep],
        )
        return RetentionResult(
            removed=len(removed),
            kept_bookmarked=len(keep),
            message=f"Removed {len(removed)} memories older than {days} days; kept {len(keep)} bookmarked.",
        )

    # -- reads -----------------------------------------------------------------------------

    async def search(
        self,
        query: Any,
        limit: Any = 5,
        min_relevance: Any = None,
        after: Any = None,
        before: Any = None,
        when: Any = None,
        tags: Any = None,
        tag_mode: Any = "any",
        type: Any = None,  # noqa: A002
        min_confidence: Any = None,
    ) -> SearchResults:
        started = time.perf_counter()
        text = validation.query(query)
        count = validation.limit(limit, name="limit", high=20)
        cutoff = validation.min_relevance(min_relevance, RELEVANCE_CUTOFF)
        after_us, before_us = validation.time_window(after, before, when)
        where = MemoryFilter(
            after_us=after_us,
            before_us=before_us,
            tags=tuple(validation.tags(tags)),
            tag_mode=validation.tag_mode(tag_mode),
            type=validation.memory_type(type) if type is not None else None,
            min_confidence=validation.confidence(min_confidence) if min_confidence is not None else None,
        )
        candidates, evidence, found = await self._rank(text, where, prefetch=count * 3)
        scored = list(zip(candidates, relevance_scores(candidates, evidence)))
        scored.sort(key=lambda pair: pair[1], reverse=True)  # stable: equal scores keep the fused order
        kept = [(c, score) for c, score in scored if score >= cutoff]
        missing = [c.memory_id for c, _ in kept[: count * 3] if c.memory_id not in found]
        if missing:  # a topic member that scoring moved up: rare, one more trip
            found.update(await self._read((await self._store_or_raise()).get, missing))
        hits: list[SearchHit] = []
        seen: set[str] = set()
        for candidate, score in kept[: count * 3]:
            memory = found.get(candidate.memory_id)
            if memory is None or not where.matches(memory):
                continue
            digest = memory.content_hash or content_hash(memory.content)
            if digest in seen:  # never the same content twice
                continue
            seen.add(digest)
            hits.append(SearchHit(**_public(memory).model_dump(), relevance_score=score, matched_by=candidate.matched_by))
            if len(hits) == count:
                break
        self._search_timer.add(started)
        message = (
            f"{len(hits)} relevant {'memory' if len(hits) == 1 else 'memories'}."
            if hits
            else f"No stored memory is relevant to this query (none scored {cutoff:g} or more)."
        )
        return SearchResults(query=text, results=hits, count=len(hits), message=message)

    async def rank(self, text: str, where: MemoryFilter | None = None) -> tuple[list[Candidate], QueryEvidence]:
        """All candidates for a query, best first, and the query-level evidence for scoring them."""
        candidates, evidence, _found = await self._rank(text, where, prefetch=0)
        return candidates, evidence

    async def _rank(
        self, text: str, where: MemoryFilter | None, prefetch: int
    ) -> tuple[list[Candidate], QueryEvidence, dict[str, StoredMemory]]:
        """`rank`, plus the memories most likely to be returned (the first `prefetch` candidates and
        the leading topic members), fetched with the coverage. Three trips to the store: keywords
        while the query is embedded, then vectors and topic members, then coverage and contents."""

        async def by_keyword() -> list[KeywordMatch]:  # needs no vector: runs while the query is embedded
            return await self._read((await self._store_or_raise()).keyword, text, CANDIDATES, where)

        store, vectors, topics, keyword = await asyncio.gather(
            self._store_or_raise(), self._embedder.embed([text], urgent=True), self._topic_index(), by_keyword()
        )
        topic = topics.match(vectors[0])
        words = list(topic.keywords) if topic else []
        dense, _, members = await self._read(store.retrieve, vectors[0], None, CANDIDATES, words, TOPIC_CANDIDATES, where)
        candidates = fuse(dense, keyword, members)
        if not candidates:
            return [], QueryEvidence(0.0, 0.0, 0.0), {}
        likely = [c.memory_id for c in candidates[:prefetch]]
        likely += [c.memory_id for c in candidates[prefetch:] if c.topic > 0][:prefetch]
        coverage, found = await self._read(
            store.coverage_and_get, text, [c.memory_id for c in candidates[:10]], likely
        )
        evidence = QueryEvidence(
            top_cosine=max((m.similarity for m in dense), default=0.0),
            coverage=max(coverage.values(), default=0.0),
            topic=topic.activation * TOPIC_MEMBERSHIP if topic and candidates[0].topic else 0.0,
            activation=topic.activation if topic else 0.0,
        )
        return candidates, evidence, found

    async def get(self, memory_id: Any) -> Memory:
        mid = validation.memory_id(memory_id)
        store = await self._store_or_raise()
        found = await self._read(store.get, [mid])
        if mid not in found:
            raise MemoryNotFoundError(mid)
        return _public(found[mid])

    async def get_many(self, memory_ids: Any) -> list[Memory | None]:
        """One lookup; results in the order asked, None where no memory has that id."""
        ids = validation.memory_ids(memory_ids)
        store = await self._store_or_raise()
        found = await self._read(store.get, list(dict.fromkeys(ids)))
        return [_public(found[mid]) if mid in found else None for mid in ids]

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
        summary, size, collections = await asyncio.gather(
            self._summary_report(store), self._read(store.size_bytes), self._read(store.counts)
        )
        share_usage = getattr(store, "share_usage", None)  # symbiote.azure.snapshots.GuardedStore on a file share
        share = await self._read(share_usage) if callable(share_usage) else None
        quota = self.policy.max_memories
        return MemoryStats(
            **summary,
            collections=collections,
            storage_mb=round(size / 1_048_576, 3),
            quota=quota,
            usage_percent=round(100 * summary["total_memories"] / quota, 1) if quota else None,
            embedding_model=MODEL_NAME,
            embedding_dimension=MODEL_DIMENSION,
            avg_store_ms=self._store_timer.mean_ms,
            avg_search_ms=self._search_timer.mean_ms,
            retention_days=self.policy.retention_days,
            share=share,
        )

    async def _summary_report(self, store: MemoryStore) -> dict[str, Any]:
        """Counts per type and tag, oldest and newest (symbiote.memory.summary): scanned once, then kept
        current by this instance's writes; rescanned in the background when older than 30 s, for
        writes by other instances. A stats call never waits for a scan but the very first."""
        summary = self._summary
        if summary is None:
            summary = await self._rescan(store)
        elif summary.age() > SUMMARY_TTL_SECONDS and (self._summary_refresh is None or self._summary_refresh.done()):
            self._summary_refresh = asyncio.create_task(self._rescan_quietly(store))
        return summary.report()

    async def _rescan(self, store: MemoryStore) -> Summary:
        writes = self._writes
        fresh = Summary(await self._read(store.scan, urgent=False), iso_utc)
        if self._writes != writes:  # a write landed meanwhile: the scan may or may not show it
            if self._summary is not None:
                return self._summary  # kept current by that write; try again later
            fresh.taken = float("-inf")  # close enough for now, rescanned at the next call
        self._summary = fresh
        return fresh

    async def _rescan_quietly(self, store: MemoryStore) -> Summary | None:
        try:
            return await self._rescan(store)
        except Exception as exc:  # the last summary stays; the next stats call tries again
            log.warning("memory statistics refresh failed: %s", exc)
            return None

    # -- policy ----------------------------------------------------------------------------

    def _draft(
        self, content: Any, tags: Any, type: Any, confidence: Any, conversation_id: Any, bookmarked: Any  # noqa: A002
    ) -> StoredMemory:
        """A validated memory without id or time yet."""
        text = validation.content(content)
        return StoredMemory(
            memory_id="",
            content=text,
            timestamp="",
            created_us=0,
            tags=tuple(validation.tags(tags)),
            content_hash=content_hash(text),
            type=validation.memory_type(type) if type is not None else None,
            confidence=validation.confidence(confidence) if confidence is not None else None,
            bookmarked=validation.flag(bookmarked, "bookmarked"),
            conversation_id=validation.conversation_id(conversation_id) if conversation_id is not None else None,
        )

    def _stamp(self, draft: StoredMemory) -> StoredMemory:
        memory_id = self._ids.new()
        created_us = int(memory_id[4:20])
        return replace(draft, memory_id=memory_id, created_us=created_us, timestamp=iso_utc(created_us))

    async def _check_policy(self, store: MemoryStore, draft: StoredMemory) -> None:
        """Memories drawn from a conversation (conversation_id given) must be confident and few."""
        if draft.conversation_id is None:
            return
        floor = self.policy.confidence_min
        if draft.confidence is None or draft.confidence < floor:
            raise PolicyRefusedError(
                f"Not stored: memories drawn from a conversation need confidence >= {floor:g} "
                f"(MEMORY_CONFIDENCE_MIN; got {draft.confidence}). Store it without conversation_id if the "
                "user asked for it explicitly."
            )
        since = _now_us() - self.policy.window_minutes * 60 * 1_000_000
        recent = await self._read(store.count_from, draft.conversation_id, since, urgent=False)
        if recent >= self.policy.max_per_window:
            raise PolicyRefusedError(
                f"Not stored: {recent} memories were already drawn from this conversation in the last "
                f"{self.policy.window_minutes} minutes (MEMORY_MAX_PER_WINDOW={self.policy.max_per_window}). "
                "Keep the most important ones; update_memory can refine them."
            )

    async def _check_quota(self, store: MemoryStore, adding: int) -> str | None:
        quota = self.policy.max_memories
        if quota is None or adding == 0:
            return None
        current = await self._read(store.count, urgent=False)
        if current + adding > quota:
            raise QuotaExceededError(
                f"Memory quota reached: {current} of {quota} memories are stored (MAX_MEMORIES), so this was not "
                "saved. Nothing is ever deleted to make room: delete memories you no longer need, or raise "
                "MAX_MEMORIES."
            )
        if current + adding >= QUOTA_WARNING * quota:
            message = f"Warning: {current + adding} of {quota} memories used ({100 * (current + adding) / quota:.0f} %)."
            log.warning("memory quota: %s", message)
            return message
        return None

    async def _near_duplicates(self, store: MemoryStore, vector: Any) -> list[NearDuplicate]:
        close = [m for m in await self._read(store.nearest, vector, 3, None, False, urgent=False) if m.similarity >= NEAR_DUPLICATE]
        if not close:
            return []
        found = await self._read(store.get, [m.memory_id for m in close], urgent=False)
        return [
            NearDuplicate(memory_id=m.memory_id, content=found[m.memory_id].content, similarity=round(m.similarity, 3))
            for m in close
            if m.memory_id in found
        ]

    async def _topic_index(self) -> TopicIndex:
        if self._topics is None:
            self._topics = TopicIndex(await self._embedder.embed(TopicIndex.questions()))
        return self._topics

    # -- plumbing --------------------------------------------------------------------------

    async def _store_or_raise(self) -> MemoryStore:
        if self._store is not None:
            return self._store
        if self._damaged is not None:  # never retried by itself: an operator decides (symbiote reset)
            raise self._damaged
        async with self._open_lock:
            if self._store is None:
                try:
                    self._store = await self._run(self._open_store, MODEL_NAME, MODEL_DIMENSION)
                    self._store_error = None
                    self._absent = False
                    log.info("memory store opened")
                except StoreDamagedError as exc:
                    self._damaged = exc
                    self._store_error = str(exc)
                    log.error("memory store damaged: %s", exc)
                    raise
                except SymbioteError as exc:
                    self._store_error = str(exc)
                    log.error("memory store unavailable: %s", exc)
                    raise
                except Exception as exc:
                    self._store_error = f"The memory store could not be opened: {exc}"
                    log.exception("memory store unavailable")
                    raise StoreUnavailableError(self._store_error) from exc
        return self._store

    async def _run(self, fn: Callable[..., T], *args: Any, urgent: bool = False) -> T:
        return await self._io.run(fn, *args, urgent=urgent)

    async def _read(self, fn: Callable[..., T], *args: Any, urgent: bool = True) -> T:
        """A read; `urgent` unless it only prepares a write (then it queues with the writes)."""
        try:
            return await self._run(fn, *args, urgent=urgent)
        except SymbioteError:
            raise
        except Exception as exc:
            log.exception("memory read failed")
            raise StoreUnavailableError(f"Reading the memory store failed: {exc}") from exc

    async def _ensure_space(self, windows: Sequence[str]) -> None:
        """Refuse a write the disk has no room for before Chroma sees a full disk (symbiote.storage.diskspace).

        Checked before embedding, so a refused batch costs no model time; one vector per window.
        """
        if self._space is not None:
            await self._space.ensure(DiskSpace.estimate(list(windows), len(windows)))

    async def _write(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a write: with the writer lease where there is one, retrying transient lock contention."""
        # A store on a shared file system (symbiote.azure.snapshots.GuardedStore) needs every write
        # to hold the writer lease and pass the snapshot gate; it offers `writing()` for that.
        writing = getattr(self._store, "writing", None)

        def guarded() -> T:
            if writing is None:
                return fn(*args)
            with writing():
                return fn(*args)

        for attempt in range(WRITE_RETRIES + 1):
            try:
                try:
                    return await self._run(guarded)
                finally:
                    self._writes += 1  # statistics must show this write (or whatever part of it landed)
            except SymbioteError:
                raise
            except Exception as exc:
                if is_transient(exc) and attempt < WRITE_RETRIES:
                    delay = RETRY_BASE_SECONDS * 2**attempt
                    log.warning("memory store busy (%s); retrying in %.2f s", exc, delay)
                    await asyncio.sleep(delay)
                    continue
                log.exception("memory write failed")
                if is_transient(exc):
                    raise StoreUnavailableError(
                        f"The memory store stayed busy after {WRITE_RETRIES} retries ({exc}); nothing was changed. "
                        "Another process may be writing to CHROMADB_PATH: only one may."
                    ) from exc
                raise write_failure(exc) from exc
        raise AssertionError("unreachable")
