"""Writes on a file share: behind the writer lease, and held back while a snapshot is taken.

`WriteGate` lets writes through together and lets a snapshot close it, wait for the writes in
flight and hold new ones until it is done. `LeaseGuard` reaches a store (the memories' or the
history's) so that every call the interface's `WRITES` table names needs the writer lease and
passes the gate; reads always work.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Concatenate, Generic, ParamSpec, TypeVar

from symbiote.azure.lease import WriterLease
from symbiote.errors import StoreUnavailableError
from symbiote.storage import HistoryStore, MemoryStore, Reach, is_write

log = logging.getLogger(__name__)

S = TypeVar("S", MemoryStore, HistoryStore)
P = ParamSpec("P")
T = TypeVar("T")

QUIESCE_TIMEOUT_S = 60.0  # how long a snapshot waits for in-flight writes
WRITE_WAIT_S = 120.0  # how long a write waits for a snapshot to finish


class WriteGate:
    """Writes share the gate; a snapshot closes it, waits for writes in flight, and holds it."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._writes = 0
        self._closed = False

    @contextlib.contextmanager
    def write(self, timeout: float = WRITE_WAIT_S) -> Iterator[None]:
        with self._cond:
            if not self._cond.wait_for(lambda: not self._closed, timeout=timeout):
                raise StoreUnavailableError(
                    "A snapshot of the memory store is taking longer than expected, so this change was not saved. "
                    "Try again in a minute."
                )
            self._writes += 1
        try:
            yield
        finally:
            with self._cond:
                self._writes -= 1
                self._cond.notify_all()

    @contextlib.contextmanager
    def quiesce(self, timeout: float = QUIESCE_TIMEOUT_S) -> Iterator[None]:
        with self._cond:
            if not self._cond.wait_for(lambda: not self._closed, timeout=timeout):
                raise TimeoutError("another snapshot is in progress")
            self._closed = True
            if not self._cond.wait_for(lambda: self._writes == 0, timeout=timeout):
                self._closed = False
                self._cond.notify_all()
                raise TimeoutError(f"writes did not finish within {timeout:g} s")
        try:
            yield
        finally:
            with self._cond:
                self._closed = False
                self._cond.notify_all()

    @property
    def writes_in_flight(self) -> int:
        return self._writes


class _Depth(threading.local):
    """How deep this thread is in `writing()`: an inner write does not take the gate again."""

    depth = 0


class _Lease(Generic[S]):
    """The writer lease and the write gate over a store opened by `opener`.

    An instance that was on standby when it opened the store reopens it after taking the lease,
    so it does not write on top of a stale view of what the previous writer saved. A standby
    instance never creates a store that does not exist yet (creating is writing).
    """

    def __init__(
        self, opener: Callable[[], Reach[S]], lease: WriterLease | None, gate: WriteGate, data_path: Path
    ) -> None:
        self._opener: Callable[[], Reach[S]] = opener
        self._local = _Depth()
        self._lease = lease
        self._gate = gate
        self._data_path = data_path
        self._lock = threading.Lock()
        self._reach: Reach[S] | None = None
        self._generation: int | None = None
        self.current()

    def current(self) -> Reach[S]:
        """The store's reach to use now: reopened once after this instance took over as the writer."""
        lease = self._lease
        with self._lock:
            writer_generation = lease.generation if lease is not None and lease.held else None
            if self._reach is not None and (writer_generation is None or writer_generation == self._generation):
                return self._reach
            if self._reach is None and lease is not None and writer_generation is None:
                if not (self._data_path / "chroma.sqlite3").exists():
                    raise StoreUnavailableError(lease.refusal() + " (The memory store has not been created yet.)")
            if self._reach is not None:
                log.info("took over as writer: reopening the memory store to see the previous writer's changes")
                self._reach.close()
            self._reach = self._opener()
            self._generation = writer_generation
            return self._reach

    def writable(self) -> Reach[S]:
        if self._lease is not None:
            self._lease.check_writable()
        return self.current()

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """Hold the write gate and require the lease for the duration of one write (re-entrant)."""
        if self._local.depth:
            self.writable()
            self._local.depth += 1
            try:
                yield
            finally:
                self._local.depth -= 1
            return
        with self._gate.write():
            self.writable()
            self._local.depth = 1
            try:
                yield
            finally:
                self._local.depth = 0

    def close(self) -> None:
        with self._lock:
            if self._reach is not None:
                self._reach.close()
                self._reach = None


class LeaseGuard(Reach[S]):
    """The reach of a store on the file share (the memories' or the history's): every write
    (`is_write`) needs the writer lease and passes through the write gate; reads always work."""

    def __init__(
        self, opener: Callable[[], Reach[S]], lease: WriterLease | None, gate: WriteGate, data_path: Path
    ) -> None:
        self._guard: _Lease[S] = _Lease(opener, lease, gate, data_path)

    def call(self, op: Callable[Concatenate[S, P], T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        if not is_write(op):
            return self._guard.current().call(op, *args, **kwargs)
        with self._guard.writing():
            return self._guard.writable().call(op, *args, **kwargs)

    def close(self) -> None:
        self._guard.close()
