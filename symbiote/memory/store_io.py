"""The memory engine's calls to its store: all blocking, all in worker threads.

Every call names the interface's method and its arguments, `io.read(MemoryStore.get, ids)`, and
goes to the store's `Reach` (`symbiote.storage.base`), which does what every call needs (the reset
check, the writer lease for a write, the trip to the store process). Reads someone waits on go
first and one write at a time leaves the other workers free (`symbiote.workers`). A read that
fails becomes a `StoreUnavailableError`; a write retries transient lock contention, and a full or
read-only disk becomes an error a person can act on (`symbiote.storage.disk_errors`).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Sequence
from typing import Concatenate, Generic, Literal, ParamSpec, TypeVar

from symbiote.errors import StoreUnavailableError, worded
from symbiote.memory.keyed_lock import KeyedLock
from symbiote.memory.lazy_reach import LazyReach
from symbiote.storage import DiskSpace, HistoryStore, MemoryStore, Reach, is_transient, is_write, write_failure
from symbiote.telemetry.stages import stage
from symbiote.workers import Lane, PriorityExecutor

log = logging.getLogger(__name__)
P = ParamSpec("P")
T = TypeVar("T")
S = TypeVar("S", MemoryStore, HistoryStore)

WRITE_RETRIES = 3  # transient lock contention: retried this many times, backing off exponentially
RETRY_BASE_SECONDS = 0.05
SEARCH_GRACE_SECONDS = 0.015  # a write waits this long after a read, for the same search's next trip


class StoreIO(Generic[S]):
    """Opens the store on first use and runs every read and write on it: the memory store's, and
    the conversation history's (`name`), so both get the same priorities, retries and spans."""

    def __init__(
        self, open_reach: Callable[[str, int], Reach[S]], space: DiskSpace | None, name: str = "memory store"
    ) -> None:
        self._threads = PriorityExecutor(4, "store", background_limit=1, grace=SEARCH_GRACE_SECONDS)
        self.lazy: LazyReach[S] = LazyReach(open_reach, self._open, name)
        self._opened: Reach[S] | None = None  # what the worker opened, even if no caller took it yet
        self.name = name
        self._space = space
        self.writes = 0  # bumped by every write, so statistics can tell a scan raced one
        self.on_open: list[Callable[[], None]] = []  # called once the store is first open (e.g. replay a queue)
        # One writer per memory: a change that reads a memory and writes it back (an update, a
        # mark, a link's both ends, a delete's partners) holds its id from the read to the write
        # (`keyed_lock.one_writer`). In this process only: docs/security.md says what two
        # instances on one Chroma server do.
        self.changing = KeyedLock()

    @property
    def reach(self) -> Reach[S] | None:
        """The store's reach if the store is open; None before (never opens it)."""
        return self.lazy.reach

    async def opened(self) -> Reach[S]:
        if self.lazy.reach is not None:
            return self.lazy.reach
        reach = await self.lazy.get()
        hooks, self.on_open = self.on_open, []
        for hook in hooks:
            hook()
        return reach

    async def _open(self, open_reach: Callable[[str, int], Reach[S]], model: str, dimension: int) -> Reach[S]:
        """Open the store in a worker thread, queued with the writes. The thread keeps what it opened
        for `shutdown`: a shutdown while it opens (an app stopped during its warm-up) gets there before
        the awaiting caller does, or the caller is cancelled, and the store stayed open in this process."""

        def opening() -> Reach[S]:
            reach = open_reach(model, dimension)
            self._opened = reach
            return reach

        return await self.run("background", opening)

    async def run(self, lane: Lane, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        return await self._threads.run(lane, fn, *args, **kwargs)

    async def read(self, op: Callable[Concatenate[S, P], T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """A read someone waits on: before every write. `op` is the interface's method."""
        return await self.read_in("urgent", op, *args, **kwargs)

    async def read_in(self, lane: Lane, op: Callable[Concatenate[S, P], T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """A read in `lane`: `background` when it only prepares a write (it queues with the writes),
        `idle` when nobody waits for it (a refresh: only once no other store call waits)."""
        assert not is_write(op), op.__name__  # a write goes through `write_in`: its retries, its wording
        reach = await self.opened()
        try:
            with stage(f"store {op.__name__}"):
                return await self.run(lane, functools.partial(reach.call, op, *args, **kwargs))
        except Exception as exc:  # any driver failure: logged with its trace, reported in words
            if worded(exc):
                raise
            log.exception("%s read failed", self.name)
            raise StoreUnavailableError(f"Reading the {self.name} failed: {exc}") from exc

    async def ensure_space(self, windows: Sequence[str]) -> None:
        """Refuse a write the disk has no room for before Chroma sees a full disk (symbiote.storage.diskspace).

        Checked before the store sees the write (a batch: before embedding it); one vector per window.
        """
        if self._space is not None:
            await self._space.ensure(DiskSpace.estimate(list(windows), len(windows)))

    async def write(self, op: Callable[Concatenate[S, P], T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """A write, queued with the other writes (`write_in`)."""
        return await self.write_in("background", op, *args, **kwargs)

    async def write_in(
        self,
        lane: Literal["background", "idle"],
        op: Callable[Concatenate[S, P], T],
        /,
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        """Run a write (the store's `Reach` holds the writer lease where there is one), retrying
        transient lock contention. `idle`: only when no other store call waits (work that follows an
        acknowledged write)."""
        assert is_write(op), op.__name__  # the table the lease and the store process go by
        reach = await self.opened()
        guarded = functools.partial(reach.call, op, *args, **kwargs)
        for attempt in range(WRITE_RETRIES + 1):
            try:
                try:
                    with stage(f"store {op.__name__}"):
                        return await self.run(lane, guarded)
                finally:
                    self.writes += 1  # statistics must show this write (or whatever part of it landed)
            except Exception as exc:  # classified below: retried, or turned into an error a person can act on
                if worded(exc):
                    raise
                if is_transient(exc) and attempt < WRITE_RETRIES:
                    delay = RETRY_BASE_SECONDS * 2**attempt
                    log.warning("%s busy (%s); retrying in %.2f s", self.name, exc, delay)
                    await asyncio.sleep(delay)
                    continue
                if lane == "idle":  # work that follows a write: its caller reports a failure, once (`workers.Backoff`)
                    log.debug("%s write failed", self.name, exc_info=True)
                else:
                    log.exception("%s write failed", self.name)
                if is_transient(exc):
                    raise StoreUnavailableError(
                        f"The memory store stayed busy after {WRITE_RETRIES} retries ({exc}); nothing was changed. "
                        "Another process may be writing to CHROMADB_PATH: only one may."
                    ) from exc
                raise write_failure(exc) from exc
        raise AssertionError("unreachable")

    def shutdown(self) -> None:
        """End the worker threads (after the call in progress), then close the store they opened: an
        embedded Chroma stays in Chroma's per-path cache, with its memory and threads, until its
        last client is closed."""
        self._threads.shutdown(wait=True)
        reach, self.lazy.reach, self._opened = self.lazy.reach or self._opened, None, None
        if reach is not None:
            reach.close()
