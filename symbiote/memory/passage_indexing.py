"""Indexing the passages storing did not embed: a long memory's paragraphs and spans, and whatever a
crash or an index rebuild left queued.

A memory within the model's window brings its sentences' vectors when it is stored (one run of the
model; `symbiote.storage.chroma.passages` writes them to Chroma between requests). A longer one's spans
each need a run of their own, so storing it acknowledges once the whole text's vector is durable and
they wait in the store's durable queue. This task drains that queue as idle work: once writes have
paused (or after a bounded wait behind a steady stream of them), embedded only when no search or
write waits for the model, added only when no other call to the store waits. Until it is done, a search
says so (`busy`). The queue is read from the store, so what a crash or a restart left is indexed at
the next open.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

from symbiote.embedding.embedder import AsyncEmbedder
from symbiote.memory.store_io import StoreIO
from symbiote.storage import MemoryStore
from symbiote.workers import Backoff

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

BATCH = 32  # memories read from the queue per round...
ROUND_PASSAGES = 256  # ...of which a round embeds and writes the first up to this many passages (at least one memory's)
RETRY_SECONDS = 1.0  # after a failed round; doubled each time, up to MAX_RETRY_SECONDS
MAX_RETRY_SECONDS = 300.0  # a failure that lasts costs one round (a few seconds of the model) per 5 minutes
QUIET_SECONDS = 0.1  # a round starts once no write started for this long...
MAX_DEFER_SECONDS = 30.0  # ...or after this long behind a steady stream of writes


class PassageIndexer:
    """One background task per engine, started by `kick()` and ending when the queue is empty."""

    def __init__(self, embedder: AsyncEmbedder, io: StoreIO[MemoryStore]) -> None:
        self._embedder = embedder
        self._io = io
        self._task: asyncio.Task[None] | None = None
        self._more = False  # a kick arrived while a round was running
        self._last_write = float("-inf")  # time.monotonic() when the last write began
        self.backoff = Backoff("indexing passages", log, RETRY_SECONDS, MAX_RETRY_SECONDS)

    def write_began(self) -> None:
        """A write began: the next round waits until writes pause."""
        self._last_write = time.monotonic()

    def kick(self) -> None:
        """Something may have been queued: drain the queue (start the task if it is not running)."""
        self._more = True
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._drain(), name="symbiote-passages")

    async def settled(self) -> None:
        """Wait until everything queued so far is indexed (tests, benchmarks); opens the store."""
        await self._io.opened()
        self.kick()
        while self._task is not None and not self._task.done():
            await asyncio.shield(self._task)

    def close(self) -> None:
        """Stop: what is still queued stays in the store's queue for the next open."""
        if self._task is not None:
            self._task.cancel()

    def busy(self) -> bool:
        """Whether queued passages are being indexed now (a search may miss them until they are)."""
        return self._task is not None and not self._task.done()

    @property
    def problem(self) -> str | None:
        """Why indexing keeps failing, while it does (for `/health`); None when it works."""
        return self.backoff.problem

    async def _drain(self) -> None:
        while self._more:
            self._more = False
            try:
                await self._quiet()
                while await self._round():
                    self.backoff.succeeded()
                    await self._quiet()
                self.backoff.succeeded()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - the store or the model failed: keep the queue, try again later
                await asyncio.sleep(self.backoff.failed(exc))  # logged once, not at every try
                self._more = True

    async def _quiet(self) -> None:
        """Wait until no write began for QUIET_SECONDS, but at most MAX_DEFER_SECONDS."""
        deadline = time.monotonic() + MAX_DEFER_SECONDS
        while (now := time.monotonic()) < deadline and now - self._last_write < QUIET_SECONDS:
            await asyncio.sleep(min(self._last_write + QUIET_SECONDS, deadline) - now)

    async def _round(self) -> bool:
        """Index one batch from the queue; False when it was empty."""
        io = self._io
        if io.reach is None:
            return False
        pending = await io.read_in("idle", MemoryStore.pending_passages, BATCH)
        if not pending:
            return False
        import numpy as np  # loaded with the model

        items: list[tuple[str, np.ndarray, list[str]]] = []  # the whole text's vector first (a rebuild needs it)
        spans: list[tuple[str, list[str], np.ndarray]] = []  # a long text's spans, each embedded apart
        passages = 0
        made = await self._embedder.passages([text for _mid, _windows, text in pending], idle=True)
        for (memory_id, _windows, _text), found in zip(pending, made):
            if found.complete:  # a text within the window: its passages came with the run, as in storing
                items.append((memory_id, found.vectors, found.windows))
                continue
            if spans and passages + len(found.windows) - 1 > ROUND_PASSAGES:
                break  # the rest stay queued for the next round: a round's time and memory stay bounded
            spans.append((memory_id, found.windows, found.vectors[:1]))
            passages += len(found.windows) - 1
        flat = [text for _mid, windows, _whole in spans for text in windows[1:]]
        vectors = await self._embedder.embed(flat, idle=True)
        offset = 0
        for memory_id, windows, whole in spans:
            items.append((memory_id, np.concatenate([whole, vectors[offset : offset + len(windows) - 1]]), windows))
            offset += len(windows) - 1
        await io.write_in("idle", MemoryStore.add_passages, items)  # within Chroma's maximum (`storage.chroma.batches`)
        return True
