"""The batch phase: one client stores many memories as fast as it can while another reads; the reader's
latency and the event-loop lag, idle baseline vs. during the batch.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import statistics
import time
from typing import Any

from mcp import Client

from loadtest.calls import Tally, call, search, store, verify
from loadtest.figures import header, lat_summary, lat_text, loadavg, ms
from loadtest.probe import LagProbe
from loadtest.server import LoadServer
from loadtest.transports import SessionGone, http_client, session_gone
from loadtest.workload import Texts


async def _observe(url: str, rng: random.Random, tally: Tally, stop: asyncio.Event, limit_s: float) -> None:
    """memory_stats and search_memory back to back until `stop`; a dead session is counted and replaced."""
    end = time.monotonic() + limit_s
    for _attempt in range(20):
        try:
            async with http_client(url) as client:
                while not stop.is_set() and time.monotonic() < end:
                    await call(client, tally, "memory_stats", "memory_stats", {})
                    await search(client, tally, rng)
                return
        except Exception as exc:
            if session_gone(exc) is None:
                raise


async def _baseline(args: argparse.Namespace, url: str, rng: random.Random) -> tuple[Tally, dict[str, Any]]:
    """The observer and the probe with nothing else running."""
    base = Tally("baseline")
    probe = LagProbe(url)
    stop = asyncio.Event()
    asyncio.get_running_loop().call_later(args.baseline_seconds, stop.set)
    await _observe(url, rng, base, stop, args.baseline_seconds + 30)
    base.close()
    base_lag = probe.finish()
    print(f"idle baseline ({base.seconds:.0f} s)  [load average {loadavg()}]")
    print(f"  memory_stats  {lat_text(base.lat.get('memory_stats', []))}")
    print(f"  search        {lat_text(base.lat.get('search', []))}")
    print(f"  GET /__lag_probe {lat_text(base_lag['lag_probe'])};  GET /health {lat_text(base_lag['health'])}")
    return base, base_lag


async def _batch(args: argparse.Namespace, url: str, rng: random.Random) -> tuple[Tally, Tally, dict[str, Any]]:
    """The batch and the observer at once: (the batch's tally, the observer's, the probe's latencies)."""
    heavy = Tally("batch")
    seen = Tally("observer")
    texts = Texts("batch")
    stop = asyncio.Event()
    remaining = [args.batch]

    async def writer(client: Client) -> None:
        with contextlib.suppress(SessionGone):  # counted in the tally; the other writers go on
            while remaining[0] > 0:
                remaining[0] -= 1
                await store(client, heavy, texts)

    probe = LagProbe(url)
    observer = asyncio.create_task(_observe(url, rng, seen, stop, 3600))
    await asyncio.sleep(0.5)
    heavy.started = time.monotonic()
    async with http_client(url) as client:
        await asyncio.gather(*(writer(client) for _ in range(args.batch_concurrency)))
    heavy.close()
    stop.set()
    await observer
    seen.close()
    return heavy, seen, probe.finish()


async def phase_batch(args: argparse.Namespace, server: LoadServer, out: dict[str, Any]) -> dict[str, str]:
    url = server.url
    header(f"batch: one client stores {args.batch} memories ({args.batch_concurrency} in flight) while another reads")
    rng = random.Random(1)
    base, base_lag = await _baseline(args, url, rng)
    idle = statistics.median(base_lag["lag_probe"]) if base_lag["lag_probe"] else 0.0
    heavy, seen, lag = await _batch(args, url, rng)
    load = loadavg()
    lags = [max(0.0, v - idle) for v in lag["lag_probe"]]
    print(
        f"\nduring the batch ({heavy.seconds:.0f} s, {heavy.rate('store'):.1f} stores/s, "
        f"{sum(heavy.failed.values())} failed)  [load average {load}]"
    )
    print(f"  memory_stats  {lat_text(seen.lat.get('memory_stats', []))}")
    print(f"  search        {lat_text(seen.lat.get('search', []))}")
    print(f"  observer failed requests: {sum(seen.failed.values())}")
    print(f"  GET /__lag_probe {lat_text(lag['lag_probe'])};  GET /health {lat_text(lag['health'])}")
    print(f"  event-loop lag (probe latency - idle median {ms(idle)}): {lat_text(lags)}")
    for what, count in (heavy.errors + seen.errors).most_common(5):
        print(f"    {count} x {what}")
    missing, unchecked = await verify(url, heavy.acked)
    print(f"  batch writes acknowledged {len(heavy.acked)}, lost {len(missing)}, could not check {len(unchecked)}")
    out["batch"] = {
        "loadavg": load,
        "batch": args.batch,
        "concurrency": args.batch_concurrency,
        "batch_seconds": round(heavy.seconds, 1),
        "stores_per_s": round(heavy.rate("store"), 2),
        "batch_failed": sum(heavy.failed.values()),
        "observer_failed": sum(seen.failed.values()),
        "baseline": {
            "memory_stats": lat_summary(base.lat.get("memory_stats", [])),
            "search": lat_summary(base.lat.get("search", [])),
            "lag_probe": lat_summary(base_lag["lag_probe"]),
            "health": lat_summary(base_lag["health"]),
        },
        "during": {
            "memory_stats": lat_summary(seen.lat.get("memory_stats", [])),
            "search": lat_summary(seen.lat.get("search", [])),
            "lag_probe": lat_summary(lag["lag_probe"]),
            "health": lat_summary(lag["health"]),
            "lag": lat_summary(lags),
        },
        "lost": len(missing),
        "unchecked": len(unchecked),
    }
    return heavy.acked
