"""Running on a file share: writes behind the writer lease, snapshots with writes quiesced, health.

`create_share_app(settings)` is `symbiote.http.app.create_app` plus, when SYMBIOTE_SHARE is set:

- the writer lease taken at start and kept in the background (`fileshare.WriterLease`);
- the memory store wrapped in `GuardedStore`: saving and deleting need the lease (else a clear
  tool error), and wait while a snapshot is being taken; reads always work;
- `SnapshotJob`, which the timer function (and a catch-up at start, for apps that were scaled
  to zero when the timer was due) runs: snapshot with writes quiesced, then prune;
- `/` and `/health` extended with the lease state and the share's usage against its quota.

Without SYMBIOTE_SHARE it is exactly `create_app`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, AsyncIterator, Callable, Iterator

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from symbiote.config import Settings
from symbiote.errors import StoreUnavailableError
from symbiote.azure.share import FileShare, ShareUsage, Snapshot, WriterLease, open_share, prune_snapshots
from symbiote.storage.base import MemoryStore
from symbiote.storage.opening import open_embedded_store

log = logging.getLogger(__name__)

QUIESCE_TIMEOUT_S = 60.0  # how long a snapshot waits for in-flight writes
WRITE_WAIT_S = 120.0  # how long a write waits for a snapshot to finish
USAGE_CACHE_S = 60.0
CATCH_UP_AGE = timedelta(hours=25)  # a daily snapshot missed while scaled to zero is taken at start


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
        usage: Callable[[], dict[str, Any]] | None = None,
    ) -> None:
        self._opener = opener
        self._usage = usage
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

        return call

    def share_usage(self) -> dict[str, Any] | None:
        """The file share's usage against its quota (with a warning from 90 %), for memory_stats."""
        return self._usage() if self._usage is not None else None

    def close(self) -> None:
        with self._lock:
            if self._store is not None:
                _close(self._store)
                self._store = None


def _close(store: MemoryStore) -> None:
    close = getattr(store, "close", None)  # ChromaMemoryStore.close, or RemoteStore.close in the store process
    if callable(close):
        close()


class SnapshotJob:
    """Snapshot the share with writes quiesced, then prune to the newest `keep`."""

    def __init__(self, share: FileShare, lease: WriterLease | None, gate: WriteGate, keep: int) -> None:
        self.share = share
        self.lease = lease
        self.gate = gate
        self.keep = keep
        self._running = threading.Lock()

    def run(self, reason: str = "scheduled") -> dict[str, Any]:
        if self.lease is not None and not self.lease.held:
            message = "skipped: this instance is not the writer (the writer's own timer takes the snapshot)"
            log.info("snapshot %s", message)
            return {"status": "skipped", "reason": message}
        if not self._running.acquire(timeout=QUIESCE_TIMEOUT_S):
            return {"status": "skipped", "reason": "another snapshot is still being taken"}
        try:
            started = time.perf_counter()
            with self.gate.quiesce():
                snapshot = self.share.create_snapshot()
            quiesced_ms = round((time.perf_counter() - started) * 1000, 1)
            pruned = prune_snapshots(self.share, self.keep)
            log.info(
                "%s snapshot %s taken (writes paused %.0f ms); pruned %d older",
                reason, snapshot.snapshot_id, quiesced_ms, len(pruned),
            )
            return {
                "status": "ok",
                "reason": reason,
                "snapshot": snapshot.snapshot_id,
                "writes_paused_ms": quiesced_ms,
                "pruned": [s.snapshot_id for s in pruned],
                "keep": self.keep,
            }
        finally:
            self._running.release()

    def newest(self) -> Snapshot | None:
        snapshots = self.share.list_snapshots()
        return max(snapshots, key=lambda s: s.created_at) if snapshots else None

    def catch_up(self, max_age: timedelta = CATCH_UP_AGE) -> dict[str, Any] | None:
        """Take a snapshot now if the newest is older than `max_age` (or there is none)."""
        newest = self.newest()
        if newest is not None and datetime.now(timezone.utc) - newest.created_at < max_age:
            return None
        return self.run(reason="catch-up")


@dataclass
class ShareServices:
    """Everything the share adds to one running instance."""

    share: FileShare
    lease: WriterLease
    gate: WriteGate
    snapshots: SnapshotJob
    _usage: tuple[float, dict[str, Any]] | None = field(default=None, repr=False)
    _periodic_stop: threading.Event = field(default_factory=threading.Event, repr=False)

    def usage_report(self) -> dict[str, Any]:
        """Share usage against quota (cached for a minute: on Azure it is a network call)."""
        now = time.monotonic()
        if self._usage is not None and now - self._usage[0] < USAGE_CACHE_S:
            return self._usage[1]
        try:
            usage: ShareUsage = self.share.usage()
            report = {"kind": self.share.kind, **usage.report()}
            if usage.warning:
                log.warning("%s", usage.warning)
        except Exception as exc:
            log.warning("share usage unavailable: %s", exc)
            report = {"kind": self.share.kind, "error": f"usage unavailable: {exc}"}
        self._usage = (now, report)
        return report

    def start_periodic_snapshots(self, interval_s: float = 3600.0, max_age: timedelta = CATCH_UP_AGE) -> None:
        """Without the Functions timer (`symbiote serve`): check every `interval_s`, snapshot when due."""

        def loop() -> None:
            while not self._periodic_stop.wait(interval_s):
                try:
                    self.snapshots.catch_up(max_age)
                except Exception:
                    log.exception("periodic snapshot failed")

        threading.Thread(target=loop, name="periodic-snapshots", daemon=True).start()

    def close(self) -> None:
        self._periodic_stop.set()
        self.lease.stop(release=True)


def open_share_services(settings: Settings, share: FileShare | None = None, *, catch_up: bool = True) -> ShareServices | None:
    """Open the share, take (or wait for) the writer lease; None when no share is configured."""
    share = share if share is not None else open_share(settings)
    if share is None:
        return None
    gate = WriteGate()
    lease = WriterLease(share, ttl=settings.lease_ttl_seconds)
    services = ShareServices(share, lease, gate, SnapshotJob(share, lease, gate, settings.snapshot_keep))
    if catch_up:
        lease._on_acquired = lambda: _in_background(services.snapshots.catch_up, "catch-up snapshot")
    lease.start()
    return services


def _in_background(fn: Callable[[], Any], what: str) -> None:
    def run() -> None:
        try:
            fn()
        except Exception:
            log.exception("%s failed", what)

    threading.Thread(target=run, name=what.replace(" ", "-"), daemon=True).start()


def build_share_runtime(settings: Settings, services: ShareServices | None) -> Any:
    """`runtime.build_runtime`, with the store behind the writer lease when there is a share."""
    from symbiote import runtime as rt
    from symbiote.embedding.embedder import AsyncEmbedder
    from symbiote.memory.engine import MemoryEngine
    from symbiote.mcp.personality import load
    from symbiote.mcp.history_tools import register_history_tools
    from symbiote.mcp.server import build_server

    if services is None:
        return rt.build_runtime(settings)
    personality = load(settings.personalities_dir, settings.personality)

    host = rt.store_host(settings)  # the embedded Chroma's own process (symbiote.storage.process)

    def open_store(model: str, dimension: int) -> MemoryStore:
        path = settings.chromadb_path

        def opener() -> MemoryStore:
            if host is not None:
                return host.open("memories", model, dimension)  # type: ignore[return-value]
            return open_embedded_store(path, model, dimension)

        return GuardedStore(
            opener,
            services.lease,
            services.gate,
            path,
            services.usage_report,
        )

    embedder = AsyncEmbedder(lambda: rt.load_embedder(settings.model_dir), cache_size=settings.embed_cache_size)
    engine = MemoryEngine(
        embedder, open_store, rt.engine_policy(settings), rt.disk_space(settings), on_close=host.close if host else None
    )
    log.info(
        "symbiote configured: personality=%s store=%s share=%s (%s) writer=%s",
        personality.variant, settings.chromadb_path, services.share.kind, services.share.location,
        "yes" if services.lease.held else "standby",
    )
    # History writes need the lease too; its store's only write is `add`, which GuardedStore guards.
    history = rt.history_services(
        settings,
        embedder,
        engine,
        guard=lambda opener: GuardedStore(opener, services.lease, services.gate, settings.chromadb_path),
        host=host,
    )
    server = build_server(engine, personality)
    register_history_tools(server, history)
    return rt.Runtime(settings, personality, engine, server, history=history, store_process=host)


async def share_health(runtime: Any, services: ShareServices | None) -> dict[str, Any]:
    """The usual health report plus the writer lease and the share's usage."""
    from symbiote.http.health import health_report

    report = await health_report(runtime)
    if services is None:
        return report
    report["writer"] = services.lease.status()
    report["share"] = await asyncio.to_thread(services.usage_report)
    if not services.lease.held:
        report["status"] = "degraded"
        report["read_only"] = True
    return report


def create_share_app(
    settings: Settings,
    *,
    services: ShareServices | None = None,
    share: FileShare | None = None,
    warm_up: bool = True,
    periodic_snapshots: bool = False,
) -> Starlette:
    """The HTTP app (`symbiote.http.app.create_app`) with the file share's lease, snapshots and health.

    `periodic_snapshots` is for `symbiote serve`, which has no timer function: a background check
    takes the daily snapshot when it is due.
    """
    from symbiote.http.app import create_app

    if services is None:
        services = open_share_services(settings, share)
    runtime = build_share_runtime(settings, services)
    app = create_app(settings, runtime, warm_up=warm_up)
    app.state.share = services
    if services is None:
        return app

    async def health(_request: Request) -> JSONResponse:
        return JSONResponse(await share_health(runtime, services))

    for index, route in enumerate(app.router.routes):
        if isinstance(route, Route) and route.path in ("/", "/health"):
            app.router.routes[index] = Route(route.path, health, methods=["GET"])

    inner = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(asgi: Starlette) -> AsyncIterator[Any]:
        async with inner(asgi) as state:
            yield state
        await asyncio.to_thread(services.close)

    app.router.lifespan_context = lifespan
    if periodic_snapshots:
        services.start_periodic_snapshots()
    return app
