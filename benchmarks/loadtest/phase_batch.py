"""The batch phase: one client stores many memories as fast as it can while another reads. A big import
must not stall everyone else: the reader's latency and the event-loop lag, idle vs. during the batch."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import statistics
import time
from typing import Any

from loadtest import clients
from loadtest.report import header, loadavg
from loadtest.server import LagProbe, LoadServer

BASELINE_SECONDS = 15.0
IN_FLIGHT = 4  # store calls the batch client keeps in flight


async def _observe(url: str, rng: random.Random, tally: clients.Tally, stop: asyncio.Event) -> None:
    """memory_stats and search_memory back to back until `stop`; a dead session is counted and replaced."""
    for _attempt in range(20):
        try:
            async with clients.Session(url) as session:
                while not stop.is_set():
                    await clients.call(session, tally, "memory_stats", "memory_stats", {})
                    await clients.search(session, tally, rng)
                return
        except Exception as exc:
            if clients.session_gone(exc) is None:
                raise


async def _observed(url: str, rng: random.Random, work: Any) -> tuple[clients.Tally, dict[str, Any]]:
    """The reader and the lag probe while `work` (a coroutine) runs: the reader's tally, the probe's latencies."""
    tally, stop, probe = clients.Tally(), asyncio.Event(), LagProbe(url)
    reader = asyncio.create_task(_observe(url, rng, tally, stop))
    await work
    stop.set()
    await reader
    tally.close()
    return tally, probe.finish()


def _figures(tally: clients.Tally, lag: dict[str, Any], idle_lag: float) -> dict[str, Any]:
    """The reader's and the probe's latencies, printed and returned; lag is probe latency minus its idle median."""
    series = {op: tally.lat.get(op, []) for op in ("memory_stats", "search")}
    series |= {"lag_probe": lag["lag_probe"], "health": lag["health"]}
    series["lag"] = [max(0.0, v - idle_lag) for v in lag["lag_probe"]]
    for key, values in series.items():
        print(f"  {key:<13} {clients.latency_text(values)}")
    failed = sum(tally.failed.values())
    print(f"  the reader's failed requests: {failed}")
    return {key: clients.latency(values) for key, values in series.items()} | {"failed": failed}


async def phase_batch(args: argparse.Namespace, server: LoadServer, out: dict[str, Any]) -> dict[str, str]:
    url, rng = server.url, random.Random(1)
    header(f"batch: one client stores {args.batch} memories ({IN_FLIGHT} in flight) while another reads")
    base, base_lag = await _observed(url, rng, asyncio.sleep(BASELINE_SECONDS))
    idle_lag = statistics.median(base_lag["lag_probe"]) if base_lag["lag_probe"] else 0.0
    print(f"idle, {base.seconds:.0f} s (event-loop lag: probe latency minus its idle median, {idle_lag * 1e3:.1f} ms)")
    baseline = _figures(base, base_lag, idle_lag)

    heavy, texts, todo = clients.Tally(), clients.texts("batch"), iter(range(args.batch))

    async def batch() -> None:
        await asyncio.sleep(0.5)  # the reader connected first
        heavy.started = time.monotonic()

        async def writer() -> None:
            with contextlib.suppress(clients.SessionGone):  # counted in the tally; the other writers go on
                for _ in todo:
                    await clients.store(session, heavy, texts)

        async with clients.Session(url) as session:
            await asyncio.gather(*(writer() for _ in range(IN_FLIGHT)))
        heavy.close()

    seen, lag = await _observed(url, rng, batch())
    failed = sum(heavy.failed.values())
    header(f"during the batch: {heavy.seconds:.0f} s, {heavy.rate('store'):.1f} stores/s, {failed} failed")
    during = _figures(seen, lag, idle_lag)
    for what, count in (heavy.errors + seen.errors).most_common(5):
        print(f"    {count} x {what}")
    missing, unchecked = await clients.verify(url, heavy.acked)
    print(f"  batch writes acknowledged {len(heavy.acked)}, lost {len(missing)}, could not check {len(unchecked)}")
    out["batch"] = {
        "loadavg": loadavg(),
        "batch": args.batch,
        "batch_seconds": round(heavy.seconds, 1),
        "stores_per_s": round(heavy.rate("store"), 2),
        "batch_failed": failed,
        "baseline": baseline,
        "during": during,
        "lost": len(missing),
        "unchecked": len(unchecked),
    }
    return heavy.acked
