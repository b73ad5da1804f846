"""The store and embedding workers serve urgent work (a waiting search) before queued background work."""

from __future__ import annotations

import asyncio
import os
import threading
import time

import pytest

from symbiote.workers import URGENT_STREAK, PriorityExecutor, usable_cores


async def test_urgent_jobs_overtake_queued_background_jobs() -> None:
    pool = PriorityExecutor(1, "test")
    gate = threading.Event()
    order: list[str] = []
    try:
        blocker = pool.submit("background", gate.wait, 5)  # occupies the only worker
        time.sleep(0.05)
        background = [pool.submit("background", order.append, f"batch {i}") for i in range(3)]
        urgent = asyncio.wrap_future(pool.submit("urgent", order.append, "search"))
        gate.set()
        await urgent
        for future in (blocker, *background):
            future.result(timeout=5)
        assert order == ["search", "batch 0", "batch 1", "batch 2"]
    finally:
        pool.shutdown()


async def test_errors_reach_the_caller_and_shutdown_cancels_what_waits() -> None:
    pool = PriorityExecutor(1, "test")
    with pytest.raises(ZeroDivisionError):
        await pool.run("background", lambda: 1 / 0)
    gate = threading.Event()
    running = pool.submit("background", gate.wait, 5)
    time.sleep(0.05)  # the worker has taken `running`
    waiting = pool.submit("background", print, "never")
    threading.Timer(0.1, gate.set).start()
    pool.shutdown(wait=True, cancel_futures=True)
    assert running.result() is True and waiting.cancelled()
    with pytest.raises(RuntimeError, match="after shutdown"):
        pool.submit("background", print)


async def test_background_jobs_never_take_the_workers_kept_for_urgent_ones() -> None:
    pool = PriorityExecutor(3, "test", background_limit=1)
    gate = threading.Event()
    running: list[int] = []
    peak = [0]
    lock = threading.Lock()

    def write(i: int) -> None:
        with lock:
            running.append(i)
            peak[0] = max(peak[0], len(running))
        gate.wait(5)
        with lock:
            running.remove(i)

    try:
        writes = [pool.submit("background", write, i) for i in range(5)]
        time.sleep(0.1)
        assert len(running) == 1  # one write runs, four wait although two workers are idle
        # and a read still gets a worker at once
        assert await asyncio.wait_for(pool.run("urgent", lambda: "read"), 1) == "read"
        gate.set()
        for future in writes:
            future.result(timeout=5)
        assert peak[0] == 1
    finally:
        pool.shutdown()


async def test_a_stream_of_urgent_jobs_does_not_starve_background_work() -> None:
    pool = PriorityExecutor(1, "test")
    gate = threading.Event()
    order: list[str] = []
    try:
        blocker = pool.submit("urgent", gate.wait, 5)  # occupies the only worker
        time.sleep(0.05)
        write = pool.submit("background", order.append, "write")
        reads = [pool.submit("urgent", order.append, f"read {i}") for i in range(URGENT_STREAK + 6)]
        gate.set()
        for future in (blocker, write, *reads):
            future.result(timeout=5)
        assert order.index("write") == URGENT_STREAK  # after URGENT_STREAK reads, not after all of them
    finally:
        pool.shutdown()


async def test_idle_jobs_wait_until_nothing_else_does() -> None:
    pool = PriorityExecutor(2, "test", background_limit=1)
    gate = threading.Event()
    order: list[str] = []
    try:
        blocker = pool.submit("background", gate.wait, 5)  # the one background slot is taken
        time.sleep(0.05)
        idle = [pool.submit("idle", order.append, f"passages {i}") for i in range(2)]
        write = pool.submit("background", order.append, "store")
        search = pool.submit("urgent", order.append, "search")
        search.result(timeout=5)
        assert order == ["search"]  # the free worker serves urgent work, never idle work past the limit
        gate.set()
        for future in (blocker, write, *idle):
            future.result(timeout=5)
        assert order == ["search", "store", "passages 0", "passages 1"]
    finally:
        pool.shutdown()


async def test_a_write_waits_for_a_searchs_next_trip_but_not_for_ever() -> None:
    pool = PriorityExecutor(2, "test", background_limit=1, grace=2.0)
    order: list[str] = []
    try:
        pool.submit("urgent", order.append, "search 1").result(timeout=5)
        write = pool.submit("background", order.append, "write")  # within the grace after a read: waits
        for trip in range(1, 4):
            time.sleep(0.05)
            assert order[-1] != "write"
            pool.submit("urgent", order.append, f"trip {trip}").result(timeout=5)
        started = time.monotonic()
        write.result(timeout=5)  # three reads in a row while it waited: it goes without the grace
        assert time.monotonic() - started < 1.0
        assert order == ["search 1", "trip 1", "trip 2", "trip 3", "write"]
    finally:
        pool.shutdown()


@pytest.mark.parametrize(
    ("cpu_max", "expected"),
    [("50000 100000\n", 1), ("100000 100000\n", 1), ("150000 100000\n", 2), ("max 100000\n", None)],
)
def test_usable_cores_follow_a_containers_cpu_quota_in_cgroup_v2(tmp_path, cpu_max, expected):
    """Azure gives a replica half a vCPU: the model must not run two threads on it. The quota may be
    set on the process's own group or one above it."""
    (tmp_path / "cgroup").write_text("0::/app/replica\n")
    (tmp_path / "fs" / "app" / "replica").mkdir(parents=True)
    (tmp_path / "fs" / "app" / "cpu.max").write_text(cpu_max)
    (tmp_path / "fs" / "app" / "replica" / "cpu.max").write_text("max 100000\n")
    cores = len(os.sched_getaffinity(0))
    assert usable_cores(str(tmp_path / "fs"), str(tmp_path / "cgroup")) == min(cores, expected or cores)
    assert usable_cores(str(tmp_path / "fs"), str(tmp_path / "absent")) == cores


@pytest.mark.parametrize(("quota", "expected"), [("50000", 1), ("-1", None), ("250000", 3)])
def test_usable_cores_follow_a_cpu_quota_in_cgroup_v1(tmp_path, quota, expected):
    """A v1 host (older Docker and Kubernetes nodes) keeps the quota in the cpu controller's own tree."""
    (tmp_path / "cgroup").write_text("4:memory:/bench\n2:cpu,cpuacct:/bench\n0::/\n")
    group = tmp_path / "fs" / "cpu,cpuacct" / "bench"
    group.mkdir(parents=True)
    (group / "cpu.cfs_quota_us").write_text(f"{quota}\n")
    (group / "cpu.cfs_period_us").write_text("100000\n")
    cores = len(os.sched_getaffinity(0))
    assert usable_cores(str(tmp_path / "fs"), str(tmp_path / "cgroup")) == min(cores, expected or cores)
