"""Writes on a file share: behind the writer lease, and held back while a snapshot is taken.

`WriteGate` lets writes through together and lets a snapshot close it, wait for the writes in
flight and hold new ones until it is done. `GuardedStore` wraps a `MemoryStore` (or the history
store) so that its writes need the writer lease and pass the gate; reads always work.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from pathlib import Path
from typing import Any, Callable, Iterator

from symbiote.azure.lease import WriterLease
from symbiote.errors import StoreUnavailableError
from symbiote.storage.base import MemoryStore

log = logging.getLogger(__name__)

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


class GuardedStore:
    """A `MemoryStore` whose writes need the writer lease and pass through the write gate.

    An instance that was on standby when it opened the store reopens it after taking the lease,
    so it does not write on top of a stale view of what the previous writer saved. A standby
    instance never creates a store that does not exist yet (creating is writing).
    """

    def __init__(
        self,
        opener: Callable[[], MemoryStore],
        lease: WriterLease | None,
        gate: WriteGate,
        data_path: Path,
    ) -> None:
        self._opener = opener
        self._local = threading.local()
        self._lease = lease
        self._gate = gate
        self._data_path = data_path
        self._lock = threading.Lock()
        self._store: MemoryStore | None = None
        self._generation: int | None = None
        self._current()

    def _current(self) -> MemoryStore:
        lease = self._lease
        with self._lock:
            writer_generation = lease.generation if lease is not None and lease.held else None
            if self._store is not None and (writer_generation is None or writer_generation == self._generation):
                return self._store
            if self._store is None and lease is not None and writer_generation is None:
                if not (self._data_path / "chroma.sqlite3").exists():
                    raise StoreUnavailableError(lease.refusal() + " (The memory store has not been created yet.)")
            if self._store is not None:
                log.info("took over as writer: reopening the memory store to see the previous writer's changes")
                _close(self._store)
            self._store = self._opener()
            self._generation = writer_generation
            return self._store

    def _writable(self) -> MemoryStore:
        if self._lease is not None:
            self._lease.check_writable()
        return self._current()

    # The MemoryStore operations, whatever their signatures: everything is delegated to the store,
    # and writes need the lease and pass the gate. `add` and `delete` are the writes by name; an
    # engine that knows its own writes wraps each in `writing()` (see MemoryEngine._write), which
    # covers any write operation the store grows later.

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """Hold the write gate and require the lease for the duration of one write."""
        if getattr(self._local, "depth", 0):
            self._writable()
            self._local.depth += 1
            try:
                yield
            finally:
                self._local.depth -= 1
            return
        with self._gate.write():
            self._writable()
            self._local.depth = 1
            try:
                yield
            finally:
                self._local.depth = 0

    def add(self, *args: Any, **kwargs: Any) -> Any:
        with self.writing():
            return self._writable().add(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        with self.writing():
            return self._writable().delete(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        target = getattr(self._current(), name)
        if not callable(target):
            return target

        def call(*args: Any, **kwargs: Any) -> Any:
            return getattr(self._current(), name)(*args, **kwargs)

        call.__name__ = name  # the method's name, for whoever reports the call (the `store <op>` spans)
        return call

    def close(self) -> None:
        with self._lock:
            if self._store is not None:
                _close(self._store)
                self._store = None


def _close(store: MemoryStore) -> None:
    close = getattr(store, "close", None)  # ChromaMemoryStore.close, or RemoteStore.close in the store process
    if callable(close):
        close()
