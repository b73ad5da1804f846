"""memory_stats: the memories' summary, the store's size, the quota and the engine's mean latencies.

The summary (counts per type and tag, oldest, newest: `symbiote.memory.summary`) is scanned
once, then kept current by this instance's writes, and rescanned in the background when older
than `SUMMARY_TTL_SECONDS`, for writes by other instances. A stats call never waits for a scan
but the very first. The size and record counts are read again only after a write.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from symbiote.embedding import MODEL_DIMENSION, MODEL_NAME
from symbiote.memory.clock import iso_utc
from symbiote.memory.owner_stats import OwnerFigures
from symbiote.memory.records import MemoryStats
from symbiote.memory.store_io import StoreIO
from symbiote.memory.summary import Summary
from symbiote.memory.write_policy import EnginePolicy
from symbiote.storage import MemoryStore, StoredMemory

log = logging.getLogger(__name__)

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

    async def report(self, store: MemoryStore, policy: EnginePolicy) -> MemoryStats:
        summary, (size, collections) = await asyncio.gather(self._summary_report(store), self._sizes(store))
        share = await self._io.read(self._share_usage) if self._share_usage is not None else None
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

    async def _sizes(self, store: MemoryStore) -> tuple[int, dict[str, int]]:
        """The store's size on disk and its record counts: read again only after a write (any write,
        passages' included, bumps `writes`) or after SIZES_TTL_SECONDS (another instance's writes)."""
        writes = self._io.writes
        if self._sizes_cache is not None and self._sizes_cache[0] == writes and self._sizes_cache[1] > time.monotonic():
            return self._sizes_cache[2]
        read = self._io.read
        size, counts = await asyncio.gather(read(store.size_bytes), read(store.counts))
        if self._io.writes == writes:
            self._sizes_cache = (writes, time.monotonic() + SIZES_TTL_SECONDS, (size, counts))
        return size, counts

    async def tags(self, store: MemoryStore) -> dict[str, int]:
        """Every stored tag, most used first, from the summary (the first call scans)."""
        return (await self._current(store)).tag_counts()

    async def _summary_report(self, store: MemoryStore) -> dict[str, Any]:
        return (await self._current(store)).report()

    async def _current(self, store: MemoryStore) -> Summary:
        summary = self._summary
        if summary is None:
            summary = await self._rescan(store)
        elif summary.age() > SUMMARY_TTL_SECONDS and (self._refresh is None or self._refresh.done()):
            self._refresh = asyncio.create_task(self._rescan_quietly(store))
        return summary

    async def _rescan(self, store: MemoryStore, idle: bool = False) -> Summary:
        """`idle`: a refresh nobody waits for, read only once no other store call waits."""
        writes = self._io.writes
        fresh = Summary(await self._io.read_in("idle" if idle else "background", store.scan), iso_utc)
        if self._io.writes != writes:  # a write landed meanwhile: the scan may or may not show it
            if self._summary is not None:
                return self._summary  # kept current by that write; try again later
            fresh.taken = float("-inf")  # close enough for now, rescanned at the next call
        self._summary = fresh
        return fresh

    async def _rescan_quietly(self, store: MemoryStore) -> Summary | None:
        try:
            return await self._rescan(store, idle=True)
        except Exception as exc:  # noqa: BLE001 - a background refresh: the last summary stays, the next stats call tries again
            log.warning("memory statistics refresh failed: %s", exc)
            return None
