"""Worker threads that serve a waiting person before background work.

A client storing a batch queues dozens of store and embedding jobs; with a plain FIFO pool a
search that arrives behind them waits for all of them, and while several writes run at once
they take most of the GIL (Chroma's bindings hold it for a whole call). Here every job is
`urgent` (someone is waiting on a read: search, get, stats) or background (writes and the checks
that precede them). A free worker takes the oldest urgent job first, and at most
`background_limit` background jobs run at a time, so the other workers stay free for reads. So
that a steady stream of searches cannot starve the writes forever, a waiting background job goes
first after every `URGENT_STREAK` urgent ones (a bound on waiting, not a share: searches stay first).
`idle` jobs (work that follows an acknowledged write, such as indexing its sentences) run only when
no urgent or background job waits, and count against `background_limit` like background ones.
With a `grace`, no background or idle job starts while an urgent one runs or within `grace`
seconds after one ended, until `GRACE_TRIPS` urgent jobs went in a row: a search can make a
second trip to the store right after its first (a memory that scoring moved up), and a write
started between the two would make it wait for the whole write; after them a waiting write goes,
so reads in a closed loop still leave writes half the turns.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import math
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Literal, ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")
Job = tuple[Future[Any], Callable[[], Any]]
# Which queue a job waits in: someone waits on it; background (writes and the checks before them);
# idle (work that follows an acknowledged write). Passed first, before the call it schedules, so the
# call's own arguments are checked against its function (ParamSpec) and none can be mistaken for it.
Lane = Literal["urgent", "background", "idle"]


def lane(urgent: bool = False, idle: bool = False) -> Lane:
    """The lane of a job someone may wait on (`urgent`) or nobody waits on (`idle`): urgent first."""
    return "urgent" if urgent else "idle" if idle else "background"


URGENT_STREAK = 16  # urgent jobs taken in a row while a background job waits, before it gets its turn
GRACE_TRIPS = 3  # with a grace: urgent jobs in a row after which a waiting background job goes anyway


class PriorityExecutor:
    """`workers` threads; urgent jobs first, then background ones (at most `background_limit` at once)."""

    def __init__(self, workers: int, name: str, background_limit: int | None = None, grace: float = 0.0) -> None:
        self._urgent: deque[Job] = deque()
        self._background: deque[Job] = deque()
        self._idle: deque[Job] = deque()
        self._background_limit = background_limit or workers
        self._background_running = 0
        self._streak = 0  # urgent jobs taken since a background job last could have gone
        self._grace = grace
        self._urgent_running = 0
        self._urgent_ended = 0.0  # time.monotonic() when the last urgent job ended
        self._closed = False
        self._cond = threading.Condition()
        self._threads = [threading.Thread(target=self._work, name=f"{name}_{i}", daemon=True) for i in range(workers)]
        for thread in self._threads:
            thread.start()

    def submit(self, lane: Lane, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        future: Future[T] = Future()
        with self._cond:
            if self._closed:
                raise RuntimeError("cannot schedule new work after shutdown")
            queue = {"urgent": self._urgent, "background": self._background, "idle": self._idle}[lane]
            queue.append((future, functools.partial(fn, *args, **kwargs)))
            self._cond.notify_all()
        return future

    async def run(self, lane: Lane, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        return await asyncio.wrap_future(self.submit(lane, fn, *args, **kwargs))

    def _next(self) -> tuple[Job, bool] | None:
        with self._cond:
            while True:
                background_may_go = bool(self._background) and self._background_running < self._background_limit
                if self._urgent and not (background_may_go and self._streak >= URGENT_STREAK):
                    self._streak = self._streak + 1 if background_may_go else 0
                    self._urgent_running += 1
                    return self._urgent.popleft(), False
                wait = self._held()
                if background_may_go and wait == 0.0:
                    self._streak = 0
                    self._background_running += 1
                    return self._background.popleft(), True
                if self._idle and not self._urgent and not self._background and wait == 0.0:
                    if self._background_running < self._background_limit:
                        self._background_running += 1
                        return self._idle.popleft(), True
                if self._closed and not self._background and not self._idle:
                    return None
                self._cond.wait(wait if wait > 0 else None)

    def _held(self) -> float:
        """0.0 if background work may start now; else how long to wait (-1.0: until an urgent job ends)."""
        if not self._grace or self._streak >= GRACE_TRIPS:
            return 0.0
        if self._urgent_running:
            return -1.0
        return max(0.0, self._urgent_ended + self._grace - time.monotonic())

    def _work(self) -> None:
        while (taken := self._next()) is not None:
            (future, call), background = taken
            try:
                if future.set_running_or_notify_cancel():
                    try:
                        result = call()
                    except BaseException as exc:  # noqa: BLE001 - handed to the caller through its future
                        future.set_exception(exc)
                    else:
                        future.set_result(result)
            finally:
                with self._cond:
                    if background:
                        self._background_running -= 1
                    else:
                        self._urgent_running -= 1
                        self._urgent_ended = time.monotonic()
                    self._cond.notify_all()

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        with self._cond:
            self._closed = True
            if cancel_futures:
                for future, _call in [*self._urgent, *self._background, *self._idle]:
                    future.cancel()
                self._urgent.clear()
                self._background.clear()
                self._idle.clear()
            self._cond.notify_all()
        if wait:
            for thread in self._threads:
                if thread is not threading.current_thread():
                    thread.join()


class Backoff:
    """A background job that keeps failing: it waits `first` seconds after its first failure, twice as
    long after each next one up to `cap`, so a failure that lasts costs a try every `cap` seconds and
    never a spinning core. The log hears of it once (the first failure, then the recovery), not at
    every try; meanwhile `problem` says what is wrong, for `/health`."""

    def __init__(self, job: str, log: logging.Logger, first: float = 1.0, cap: float = 300.0) -> None:
        self.job = job
        self._log = log
        self._first = first
        self._cap = cap
        self._delay = first
        self.failures = 0  # in a row, since the job last succeeded
        self._since = ""
        self.problem: str | None = None

    def failed(self, exc: BaseException) -> float:
        """Note a failure; returns how long to wait before the next try."""
        self.failures += 1
        if self.failures == 1:
            self._since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        self.problem = f"{self.job} failing since {self._since} ({self.failures} tries): {exc}"
        delay = self._delay
        if self.failures == 1:
            self._log.warning(
                "%s failed (%s); trying again after %.0f s, then less and less often (at most every %.0f s), "
                "logged again only once it works",
                self.job,
                exc,
                delay,
                self._cap,
            )
        else:
            self._log.debug("%s failed again (%d in a row): %s", self.job, self.failures, exc)
        self._delay = min(self._delay * 2, self._cap)
        return delay

    def succeeded(self) -> None:
        """The job worked: the next failure starts from `first` again."""
        if self.failures:
            self._log.warning("%s works again after %d failed tries", self.job, self.failures)
        self.failures = 0
        self.problem = None
        self._delay = self._first


_NUMPY_LOCK = threading.Lock()


def import_numpy() -> None:
    """Import numpy (and what imports it) in one thread at a time the first time. numpy is off the
    import path to `initialize`, so several worker threads may ask for it at once, and a first
    import of numpy racing another fails ("partially initialized module 'numpy._typing'")."""
    with _NUMPY_LOCK:
        import numpy  # noqa: F401


def usable_cores(root: str = "/sys/fs/cgroup", own: str = "/proc/self/cgroup") -> int:
    """Cores this process may use: its CPU affinity, capped by the CPU quota of its cgroup or any group
    above it (v2's `cpu.max`, v1's `cpu.cfs_quota_us`), which the affinity does not show (Azure
    Container Apps gives a replica half a vCPU; a model running two threads on it spends the quota
    twice as fast and waits out the rest of each period)."""
    cores = len(os.sched_getaffinity(0)) if sys.platform == "linux" else os.cpu_count() or 1
    quotas = [math.ceil(quota / period) for quota, period in _cpu_quotas(Path(root), Path(own)) if period > 0]
    return max(1, min([cores, *quotas]))


def _cpu_quotas(root: Path, own: Path) -> list[tuple[int, int]]:
    """(quota, period) of each group from this process's up to the root that sets one."""
    try:
        lines = own.read_text().splitlines()
    except OSError:  # not Linux: the affinity is all we know
        return []
    found: list[tuple[int, int]] = []
    for line in lines:
        hierarchy, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if hierarchy == "0" and controllers == "":  # v2: one tree, `cpu.max` holds "<quota|max> <period>"
            for group in _upwards(root, path):
                words = _read(group / "cpu.max").split()
                if len(words) == 2 and words[0] != "max" and all(word.isdigit() for word in words):
                    found.append((int(words[0]), int(words[1])))
        elif "cpu" in controllers.split(","):  # v1: the cpu controller's own tree, -1 for no quota
            mount = next((m for m in (root / "cpu", root / controllers) if m.is_dir()), None)
            for group in _upwards(mount, path) if mount is not None else []:
                quota, period = _read(group / "cpu.cfs_quota_us"), _read(group / "cpu.cfs_period_us")
                if quota.isdigit() and period.isdigit():
                    found.append((int(quota), int(period)))
    return found


def _upwards(mount: Path, path: str) -> list[Path]:
    parts = [part for part in path.split("/") if part and part != ".."]
    return [mount.joinpath(*parts[:depth]) for depth in range(len(parts), -1, -1)]


def _read(file: Path) -> str:
    try:
        return file.read_text().strip()
    except OSError:  # a group without the controller's file, or one gone meanwhile
        return ""
