"""The statistics of the memories, one concept: what `memory_stats` reports (the memories' summary,
the store's size, the quota, the engine's mean latencies) and what the owner's statistics page
shows beyond it (additions per week, what stored them, the newest, the most edited, the trash).

Both need a scan of every memory's metadata (no text), too slow to repeat while a client stores a
batch and queued behind writes on the store. So one scan builds each (`Summary`, `OwnerFigures`),
this instance's own writes keep them current, and a rescan catches up with what other instances
(sharing a Chroma server) wrote, in the background, once older than `SUMMARY_TTL_SECONDS` or
`FRESH_SECONDS`. A stats call never waits for a scan but the very first; the size and record
counts are read again only after a write. The client's name ("console" for the owner's, "import"
for an import's) and the edit count are recorded with each memory from 2026-11-26 on; older
memories count as "unknown" and as never edited.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from symbiote.embedding import MODEL_DIMENSION, MODEL_NAME
from symbiote.errors import SymbioteError
from symbiote.memory.clock import iso_utc, now_us
from symbiote.memory.records import MemoryStats
from symbiote.memory.store_io import StoreIO
from symbiote.memory.write_policy import EnginePolicy
from symbiote.storage import MemoryStore, StoredMemory

# -- the summary memory_stats reports: counts per type and tag, oldest, newest ----------------------


class Summary:
    """Counts over a set of memories' metadata, updated one memory at a time."""

    def __init__(self, heads: Iterable[StoredMemory], iso: Callable[[int], str]) -> None:
        self._iso = iso
        self._types: Counter[str] = Counter()
        self._tags: Counter[str] = Counter()
        self._stamps: Counter[int] = Counter()
        self.taken = time.monotonic()
        for memory in heads:
            self.add(memory)

    def add(self, memory: StoredMemory) -> None:
        self._types[memory.type or "untyped"] += 1
        self._tags.update(memory.tags)
        self._stamps[memory.created_us] += 1

    def remove(self, memory: StoredMemory) -> None:
        _drop(self._types, [memory.type or "untyped"])
        _drop(self._tags, list(memory.tags))
        _drop(self._stamps, [memory.created_us])

    def replace(self, old: StoredMemory, new: StoredMemory) -> None:
        self.remove(old)
        self.add(new)

    def age(self) -> float:
        return time.monotonic() - self.taken

    def tag_counts(self) -> dict[str, int]:
        """Every stored tag as it is spelled, most used first: the console's tag picker and filter."""
        return dict(sorted(self._tags.items(), key=lambda kv: (-kv[1], kv[0])))

    def report(self) -> dict[str, Any]:
        stamps = self._stamps.keys()
        return {
            "total_memories": sum(self._types.values()),
            "by_type": dict(sorted(self._types.items())),
            "top_tags": dict(sorted(self._tags.items(), key=lambda kv: (-kv[1], kv[0]))[:10]),
            "oldest_timestamp": self._iso(min(stamps)) if stamps else None,
            "newest_timestamp": self._iso(max(stamps)) if stamps else None,
        }


K = TypeVar("K")


def _drop(counter: Counter[K], keys: Iterable[K]) -> None:
    """One fewer of each key; a key counted down to nothing is gone (as if never counted)."""
    for key in keys:
        counter[key] -= 1
        if counter[key] <= 0:
            del counter[key]


# -- the owner's figures ----------------------------------------------------------------------

log = logging.getLogger(__name__)

FRESH_SECONDS = 30.0  # the metadata is scanned again after this long, for other instances' writes
UNKNOWN = "unknown"  # a memory stored without a client's name (or before names were recorded)
CONSOLE = "console"  # what stored a memory the owner added in the console (an MCP client's name never equals it)
PREVIEW = 160  # characters of a memory's text shown in a list


@dataclass(frozen=True)
class WeekCount:
    week: str  # the ISO date of the week's Monday (UTC), e.g. "2026-11-23"
    added: int  # memories created that week and still stored


@dataclass(frozen=True)
class SourceCount:
    name: str  # the MCP client's name (e.g. "claude-ai"), "console", "unknown"; or a conversation id
    memories: int


@dataclass(frozen=True)
class MemoryBrief:
    memory_id: str
    preview: str  # the first PREVIEW characters of the text, "…" added when cut
    created_us: int
    updated_us: int | None
    edits: int  # times changed since stored (0 for memories from before the count was kept)


@dataclass(frozen=True)
class DuplicatePair:
    memory_id: str
    other_id: str
    preview: str
    other_preview: str


@dataclass(frozen=True)
class OwnerStats:
    total: int  # memories stored (the trash not counted)
    trash: int  # memories in the trash
    added_per_week: list[WeekCount]  # the last weeks, oldest first, empty weeks included
    by_client: list[SourceCount]  # most first
    by_conversation: list[SourceCount]  # the conversations with most memories, most first
    newest: list[MemoryBrief]  # newest first
    most_edited: list[MemoryBrief]  # edited at least once, most edits first
    duplicates: list[DuplicatePair] = field(default_factory=list)  # pairs the server linked as duplicates


def _preview(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= PREVIEW else flat[: PREVIEW - 1].rstrip() + "…"


def _monday(micros: int) -> datetime:
    day = datetime.fromtimestamp(micros / 1_000_000, UTC).date()
    return datetime(day.year, day.month, day.day, tzinfo=UTC) - timedelta(days=day.weekday())


def weekly(heads: list[StoredMemory], weeks: int, now: int) -> list[WeekCount]:
    """Memories created in each of the last `weeks` weeks (Monday to Sunday, UTC), oldest first."""
    this_week = _monday(now)
    starts = [this_week - timedelta(weeks=n) for n in range(weeks - 1, -1, -1)]
    counts = Counter(_monday(m.created_us) for m in heads if m.created_us)
    return [WeekCount(week=start.date().isoformat(), added=counts.get(start, 0)) for start in starts]


def _counted(names: Counter[str], top: int | None) -> list[SourceCount]:
    ranked = sorted(names.items(), key=lambda kv: (-kv[1], kv[0]))
    return [SourceCount(name, n) for name, n in (ranked[:top] if top is not None else ranked)]


async def owner_stats(io: StoreIO[MemoryStore], heads: list[StoredMemory], weeks: int = 12, top: int = 5) -> OwnerStats:
    """The owner's statistics from every memory's metadata (`heads`), then the listed memories' texts."""
    _none, trash = await io.read(MemoryStore.trashed, 0, 0)
    newest = sorted(heads, key=lambda m: (m.created_us, m.memory_id), reverse=True)[:top]
    edited = sorted(
        (m for m in heads if m.edits > 0), key=lambda m: (m.edits, m.updated_us or 0, m.memory_id), reverse=True
    )[:top]
    texts = await io.read(MemoryStore.get, list(dict.fromkeys(m.memory_id for m in [*newest, *edited])))

    def brief(m: StoredMemory) -> MemoryBrief:
        text = texts[m.memory_id].content if m.memory_id in texts else ""
        return MemoryBrief(m.memory_id, _preview(text), m.created_us, m.updated_us, m.edits)

    return OwnerStats(
        total=len(heads),
        trash=trash,
        added_per_week=weekly(heads, weeks, now_us()),
        by_client=_counted(Counter(m.client or UNKNOWN for m in heads), None),
        by_conversation=_counted(Counter(m.conversation_id for m in heads if m.conversation_id), top),
        newest=[brief(m) for m in newest if m.memory_id in texts],
        most_edited=[brief(m) for m in edited if m.memory_id in texts],
    )


class OwnerFigures:
    """Every memory's metadata for `owner_stats`: one scan (about 0.5-0.8 s at 11,000 memories),
    then kept current by this instance's writes (`added`, `replaced`, `removed`, called by the
    statistics), and scanned again in the background after FRESH_SECONDS for other instances' writes."""

    def __init__(self, io: StoreIO[MemoryStore]) -> None:
        self._io = io
        self._heads: dict[str, StoredMemory] | None = None
        self._taken = 0.0
        self._refresh: asyncio.Task[None] | None = None

    @property
    def tracking(self) -> bool:
        return self._heads is not None

    def added(self, memory: StoredMemory) -> None:
        if self._heads is not None:
            self._heads[memory.memory_id] = replace(memory, content="")

    def replaced(self, old: StoredMemory, new: StoredMemory) -> None:
        self.added(new)

    def removed(self, memory: StoredMemory) -> None:
        if self._heads is not None:
            self._heads.pop(memory.memory_id, None)

    async def report(self, weeks: int = 12, top: int = 5) -> OwnerStats:
        if self._heads is None:
            await self._scan()
        elif time.monotonic() - self._taken > FRESH_SECONDS and (self._refresh is None or self._refresh.done()):
            self._refresh = asyncio.create_task(self._scan_quietly())
        return await owner_stats(self._io, list((self._heads or {}).values()), weeks, top)

    async def _scan(self, idle: bool = False) -> None:
        """`idle`: a refresh nobody waits for, read only once no other store call waits."""
        writes = self._io.writes
        heads = await self._io.read_in("idle" if idle else "urgent", MemoryStore.scan, None)
        if self._io.writes != writes:  # a write landed meanwhile: the scan may or may not show it
            if self._heads is not None:
                return  # kept current by that write; scanned again later
            self._taken = float("-inf")  # close enough for now, scanned again at the next report
        else:
            self._taken = time.monotonic()
        self._heads = {m.memory_id: m for m in heads}

    async def _scan_quietly(self) -> None:
        try:
            await self._scan(idle=True)
        except SymbioteError as exc:  # a background refresh: the figures kept stay, the next report tries again
            log.warning("owner statistics refresh failed: %s", exc)


def duplicate_pair(first: StoredMemory, other: StoredMemory) -> DuplicatePair:
    """A pair the server linked as duplicates: the one shown first, and the other."""
    return DuplicatePair(first.memory_id, other.memory_id, _preview(first.content), _preview(other.content))


# -- memory_stats ----------------------------------------------------------------------------


SUMMARY_TTL_SECONDS = 30.0
SIZES_TTL_SECONDS = 5.0
ShareUsage = Callable[[], dict[str, Any] | None]  # blocking: runs in a worker thread


class Timer:
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


class Statistics:
    """Keeps what memory_stats reports; the write path tells it what changed."""

    def __init__(self, io: StoreIO[MemoryStore], share_usage: ShareUsage | None = None) -> None:
        self._io = io
        self._share_usage = share_usage  # the file share's usage, where the store lives on one
        self._summary: Summary | None = None  # built by one scan, then kept current by this instance's writes
        self._refresh: asyncio.Task[Summary | None] | None = None
        self._sizes_cache: tuple[int, float, tuple[int, dict[str, int]]] | None = None  # (writes, until, sizes)
        self.store_timer = Timer()
        self.search_timer = Timer()
        self.owner = OwnerFigures(io)  # the owner's figures, kept current by the same calls

    @property
    def counting(self) -> bool:
        """Whether a summary exists to keep current (until the first stats call, writes need not report)."""
        return self._summary is not None or self.owner.tracking

    def added(self, memory: StoredMemory) -> None:
        if self._summary is not None:
            self._summary.add(memory)
        self.owner.added(memory)

    def replaced(self, old: StoredMemory, new: StoredMemory) -> None:
        if self._summary is not None:
            self._summary.replace(old, new)
        self.owner.replaced(old, new)

    def removed(self, memory: StoredMemory) -> None:
        if self._summary is not None:
            self._summary.remove(memory)
        self.owner.removed(memory)

    async def report(self, policy: EnginePolicy) -> MemoryStats:
        summary, (size, collections) = await asyncio.gather(self._summary_report(), self._sizes())
        share = await self._io.run("urgent", self._share_usage) if self._share_usage is not None else None
        quota = policy.max_memories
        return MemoryStats(
            **summary,
            collections=collections,
            storage_mb=round(size / 1_048_576, 3),
            quota=quota,
            usage_percent=round(100 * summary["total_memories"] / quota, 1) if quota else None,
            embedding_model=MODEL_NAME,
            embedding_dimension=MODEL_DIMENSION,
            avg_store_ms=self.store_timer.mean_ms,
            avg_search_ms=self.search_timer.mean_ms,
            retention_days=policy.retention_days,
            share=share,
        )

    async def _sizes(self) -> tuple[int, dict[str, int]]:
        """The store's size on disk and its record counts: read again only after a write (any write,
        passages' included, bumps `writes`) or after SIZES_TTL_SECONDS (another instance's writes)."""
        writes = self._io.writes
        if self._sizes_cache is not None and self._sizes_cache[0] == writes and self._sizes_cache[1] > time.monotonic():
            return self._sizes_cache[2]
        read = self._io.read
        size, counts = await asyncio.gather(read(MemoryStore.size_bytes), read(MemoryStore.counts))
        if self._io.writes == writes:
            self._sizes_cache = (writes, time.monotonic() + SIZES_TTL_SECONDS, (size, counts))
        return size, counts

    async def tags(self) -> dict[str, int]:
        """Every stored tag, most used first, from the summary (the first call scans)."""
        return (await self._current()).tag_counts()

    async def _summary_report(self) -> dict[str, Any]:
        return (await self._current()).report()

    async def _current(self) -> Summary:
        summary = self._summary
        if summary is None:
            summary = await self._rescan()
        elif summary.age() > SUMMARY_TTL_SECONDS and (self._refresh is None or self._refresh.done()):
            self._refresh = asyncio.create_task(self._rescan_quietly())
        return summary

    async def _rescan(self, idle: bool = False) -> Summary:
        """`idle`: a refresh nobody waits for, read only once no other store call waits."""
        writes = self._io.writes
        fresh = Summary(await self._io.read_in("idle" if idle else "background", MemoryStore.scan), iso_utc)
        if self._io.writes != writes:  # a write landed meanwhile: the scan may or may not show it
            if self._summary is not None:
                return self._summary  # kept current by that write; try again later
            fresh.taken = float("-inf")  # close enough for now, rescanned at the next call
        self._summary = fresh
        return fresh

    async def _rescan_quietly(self) -> Summary | None:
        try:
            return await self._rescan(idle=True)
        except Exception as exc:  # noqa: BLE001 - a background refresh: the last summary stays, the next stats call tries again
            log.warning("memory statistics refresh failed: %s", exc)
            return None
