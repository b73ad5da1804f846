"""The memory engine: validation, ids, embedding, policy and scoring over a `MemoryStore`.

It knows nothing of MCP or HTTP; every surface (MCP tools, resources, health) calls it, and it is
their one door to the store: they call it and its parts (`trash`, `bulk`, `links`), never a reach
(tests/test_layers.py checks). The store is opened by `warm_up()` in the background (or by the
first memory operation without one), so a server answers `initialize` before Chroma and the model
have loaded. A store that cannot be opened is not fatal: each call reports why and tries again
(`symbiote.memory.lazy_reach`). All blocking work runs in worker threads (`symbiote.memory.store_io`).
The write path, the search path and the statistics live in modules of their own; this class holds
them together.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from symbiote.embedding.embedder import AsyncEmbedder
from symbiote.errors import MemoryNotFoundError, SymbioteError
from symbiote.memory import validation
from symbiote.memory.bulk import MemoryBulk
from symbiote.memory.links import MemoryLinks
from symbiote.memory.records import (
    BatchStoreResult,
    DeleteResult,
    Memory,
    MemoryPage,
    MemoryStats,
    RetentionResult,
    SearchResults,
    StoreResult,
    UpdateResult,
    public,
)
from symbiote.memory.requests import SearchRequest, StoreRequest, UpdateRequest
from symbiote.memory.searching import MemorySearch
from symbiote.memory.statistics import OwnerStats, Statistics, duplicate_pair
from symbiote.memory.store_io import StoreIO
from symbiote.memory.trash import ASSISTANT, TRASH_DAYS, MemoryTrash
from symbiote.memory.write_policy import EnginePolicy, PolicyRefusedError, QuotaExceededError
from symbiote.memory.writing import MemoryWriter
from symbiote.retrieval.ranking import QueryEvidence
from symbiote.storage import Candidate, DiskSpace, MemoryFilter, MemoryStore, Reach

__all__ = ["EnginePolicy", "MemoryEngine", "PolicyRefusedError", "QuotaExceededError"]

log = logging.getLogger(__name__)

RETENTION_INTERVAL_SECONDS = 24 * 3600
COUNT_WAIT_SECONDS = 0.5  # health's wait for the store's count, at most
READY_TIMEOUT_SECONDS = 30.0  # `ready()` never holds a caller longer, however slow the warm-up


def _retrieved(future: asyncio.Future[int]) -> None:
    """A count nobody waited for to the end: its failure is reported by the next count, not as "never retrieved"."""
    if not future.cancelled():
        future.exception()


class MemoryEngine:
    """Stores, finds, lists, updates and deletes memories. Safe to share between any number of clients."""

    def __init__(
        self,
        embedder: AsyncEmbedder,
        open_reach: Callable[[str, int], Reach[MemoryStore]],
        policy: EnginePolicy | None = None,
        space: DiskSpace | None = None,
        on_close: Callable[[], None] | None = None,
        share_usage: Callable[[], dict[str, Any] | None] | None = None,
        word_table: Path | None = None,
    ) -> None:
        """`share_usage` (blocking): the usage of the file share holding the store, for
        memory_stats, where there is one. `word_table`: the folder where setup wrote the word table
        scoring reads (`retrieval.load_lists`: the model's)."""
        self._embedder = embedder
        self._warming: asyncio.Future[None] | None = None  # the warm-up's model load and store opening
        self._on_close = on_close  # e.g. end the store process (symbiote.storage.chroma.process)
        self._counting: asyncio.Future[int] | None = None  # health's count of memories, while in flight
        self._last_count: int | None = None
        self.policy = policy or EnginePolicy()
        self._io = StoreIO(open_reach, space)
        self._stats = Statistics(self._io, share_usage)
        self._writer = MemoryWriter(embedder, self._io, self._stats, lambda: self.policy)
        self._search = MemorySearch(
            embedder,
            self._io,
            self._stats.search_timer,
            stored_tags=self.tags,
            indexing=self._writer.passages.busy,
            word_table=word_table,
        )
        # The owner's bulk operations (console, export, import) over the same store access.
        self.trash = MemoryTrash(self._io, self._stats, self._writer.passages.kick)  # deletes are kept a while
        self.bulk = MemoryBulk(embedder, self._io, self._stats, lambda: self.policy, self.trash)
        # The links the server made between memories about the same thing, for the owner's review.
        self.links = MemoryLinks(self._io, self.delete)

    # -- lifecycle -------------------------------------------------------------------------

    async def warm_up(self) -> None:
        """Open the store (creating it if need be) and load the model now rather than on the first request.

        With RETENTION_DAYS set it then stays on as the daily retention cleanup (cancel it at shutdown).
        """
        self._warming = asyncio.ensure_future(self._prepare())
        await self._warming  # cancelled with the warm-up at shutdown: nothing opens after that
        if self._io.reach is not None:
            self._writer.passages.kick()  # what a crash left queued, or a damaged vector index's rebuild
            try:
                await self.trash.purge_expired()  # then at each delete and each look at the trash
            except SymbioteError as exc:
                log.error("emptying the trash of expired memories failed: %s", exc)
        while self.policy.retention_days is not None and self._io.reach is not None:
            try:
                await self.apply_retention()
                await self.trash.purge_expired()
            except SymbioteError as exc:
                log.error("retention cleanup failed: %s", exc)
            await asyncio.sleep(RETENTION_INTERVAL_SECONDS)

    async def _prepare(self) -> None:
        # The store is opened, and created if there is none yet (from the copy made ahead): a client
        # that connects is about to store, and the first memory it stores should not wait the 30-40 ms
        # of an open. One that cannot be opened is reported now (health). The word lists load beside
        # the model, in a thread, and the tools are listed once they are in (`ready`): the second
        # storing of a session (the first with a near neighbour) waited 0.3-0.5 s for them, and storing
        # while they load waits for the GIL (the first 40-50 ms after them, 43-130 ms beside them).
        opening = self._io.opened()  # a SymbioteError saying why when it cannot be
        results = await asyncio.gather(
            opening, self._search.topic_index(), self._search.word_lists(), return_exceptions=True
        )
        for result in results:
            if isinstance(result, BaseException):
                log.warning("memory warm-up incomplete: %s", result)

    async def ready(self) -> None:
        """Wait for the warm-up's model load and store opening, if one is under way: what a client
        lists the tools for comes next, and should not wait for them. Returns at once without a
        warm-up, and after READY_TIMEOUT_SECONDS at most; a failed warm-up is ready too (each
        call then reports why)."""
        if self._warming is not None and not self._warming.done():
            await asyncio.wait({self._warming}, timeout=READY_TIMEOUT_SECONDS)

    def status(self) -> dict[str, Any]:
        """Health facts without touching the disk: ready, starting, or unavailable (and why)."""
        loaded = self._embedder.loaded
        if self._io.reach is not None:
            return {"store": "ready", "model_loaded": loaded}
        if self._io.lazy.error:
            return {"store": "unavailable", "error": self._io.lazy.error, "model_loaded": loaded}
        return {"store": "not_opened", "model_loaded": loaded}

    def background_problems(self) -> dict[str, str]:
        """Background work that keeps failing (retried less and less often), by job: for `/health`."""
        problem = self._writer.passages.problem
        return {"passages": problem} if problem else {}

    async def count(self) -> int | None:
        """Number of memories; None while the store opens or cannot be read. For
        health: never queued behind writes, and never waiting more than COUNT_WAIT_SECONDS: the
        store process serves one call at a time, and a large batch's write holds it for seconds,
        so health answers with the count from before it (one count in flight at a time)."""
        if self._io.reach is None:
            return None
        if self._counting is None or self._counting.done():
            self._counting = asyncio.ensure_future(self._io.read_in("urgent", MemoryStore.count))
            self._counting.add_done_callback(_retrieved)
        try:
            self._last_count = await asyncio.wait_for(asyncio.shield(self._counting), COUNT_WAIT_SECONDS)
        except TimeoutError:
            return self._last_count  # the store is busy with a long write: the count from before it
        except Exception:  # health must never fail because of a count: logged, reported as unknown
            log.exception("counting memories failed")
            return None
        return self._last_count

    async def store_size(self) -> int | None:
        """Bytes the store takes on disk, for the telemetry gauge: None while it is not open (this never
        opens it). Queued with the background work: nobody waits on it."""
        if self._io.reach is None:
            return None
        return await self._io.read_in("background", MemoryStore.size_bytes)

    async def passages_indexed(self) -> None:
        """Wait until the passages of every memory stored so far are indexed (they follow storing)."""
        await self._writer.passages.settled()

    def close(self) -> None:
        """Stop the background work, end the store's threads and close the store (`StoreIO.shutdown`),
        the embedder's thread, then the store process if it has one."""
        self._writer.passages.close()
        self._io.shutdown()
        self._embedder.close()
        if self._on_close is not None:
            self._on_close()

    # -- writes (symbiote.memory.writing) --------------------------------------------------

    async def store(self, request: StoreRequest) -> StoreResult:
        """`request.client`: what stores it (an MCP client's name, "console"), kept for the owner's
        statistics. `request.replaces`: ids of older memories it replaces, linked at once (symbiote.memory.links)."""
        return await self._writer.store(request)

    async def store_many(self, items: object, client: str | None = None) -> BatchStoreResult:
        """Store a batch: every item valid or none stored; one embedding pass, one write."""
        return await self._writer.store_many(items, client)

    async def update(self, request: UpdateRequest, outdated: bool | None = None) -> UpdateResult:
        """Change a memory in place: same id and original timestamp; new text is re-embedded.
        `outdated`: the owner's mark put on or taken off (symbiote.memory.writing)."""
        return await self._writer.update(request, outdated)

    async def delete(self, memory_id: object, deleted_by: str = ASSISTANT) -> DeleteResult:
        """Gone from search and reads at once; the owner can restore it from the trash for TRASH_DAYS."""
        mid = validation.memory_id(memory_id)
        if not await self.trash.move([mid], deleted_by):
            raise MemoryNotFoundError(mid)
        return DeleteResult(
            memory_id=mid,
            deleted=True,
            message=f"Memory deleted: no search finds it now. The owner can restore it from the trash for {TRASH_DAYS} days.",
        )

    async def apply_retention(self) -> RetentionResult:
        """Delete memories older than RETENTION_DAYS in one batch, never bookmarked ones. Off by default."""
        return await self._writer.apply_retention()

    # -- reads -----------------------------------------------------------------------------

    async def search(self, request: SearchRequest) -> SearchResults:
        """Memories for a query: `SearchRequest`'s fields are defined there once; each is checked by the searcher."""
        return await self._search.search(request)

    async def rank(self, text: str, where: MemoryFilter | None = None) -> tuple[list[Candidate], QueryEvidence]:
        """All candidates for a query, best first, and the query-level evidence for scoring them."""
        return await self._search.rank(text, where)

    async def get(self, memory_id: object) -> Memory:
        mid = validation.memory_id(memory_id)
        found = await self._io.read(MemoryStore.get, [mid])
        if mid not in found:
            raise MemoryNotFoundError(mid)
        return public(found[mid])

    async def get_many(self, memory_ids: object) -> list[Memory | None]:
        """One lookup; results in the order asked, None where no memory has that id."""
        ids = validation.memory_ids(memory_ids)
        found = await self._io.read(MemoryStore.get, list(dict.fromkeys(ids)))
        return [public(found[mid]) if mid in found else None for mid in ids]

    async def list_memories(self, limit: object = 10, before: object = None) -> MemoryPage:
        count = validation.limit(limit, name="limit", high=50)
        before_us = validation.before(before)
        page = await self._io.read(MemoryStore.page, count + 1, before_us)
        more = len(page) > count
        page = page[:count]
        return MemoryPage(
            memories=[public(m) for m in page],
            count=len(page),
            next_before=page[-1].memory_id if more and page else None,
        )

    async def owner_stats(self, weeks: int = 12, top: int = 5) -> OwnerStats:
        """The owner's statistics page's figures (symbiote.memory.statistics), with the memories the
        server linked as duplicates of one another."""
        report = await self._stats.owner.report(weeks, top)
        pairs = [
            duplicate_pair(link.first, link.replaced)
            for link in await self.links.links()
            if link.kind == "duplicate" and link.first is not None
        ]
        return dataclasses.replace(report, duplicates=pairs[:top])

    async def stats(self) -> MemoryStats:
        """memory_stats (symbiote.memory.statistics)."""
        return await self._stats.report(self.policy)

    async def tags(self) -> dict[str, int]:
        """Every stored tag as spelled, most used first: for the console's tag picker and filter."""
        return await self._stats.tags()
