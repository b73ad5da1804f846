"""Interleaved A/B of search latency: two checkouts, the same data, alternating server starts.

This machine's speed moves from hour to hour, so a before/after comparison is only fair when
both run in the same minutes. Each round starts `symbiote serve` from one checkout
(`PYTHONPATH=<checkout>`), warms it with 20 searches, waits 4 s, then times 120 distinct
searches with the MCP SDK client over HTTP; the next round starts the other checkout.

Usage: .venv/bin/python benchmarks/ab_search.py OLD_CHECKOUT,NEW_CHECKOUT ROUNDS DATA_DIR [bench_core]
With `bench_core` the queries are bench_core.py's (for a data directory bench_core filled: its
vocabulary is small, so each query's keywords match thousands of memories).
  e.g. git worktree add /tmp/old f769dba && ln -s "$PWD/models" /tmp/old/models
       .venv/bin/python benchmarks/ab_search.py /tmp/old,"$PWD" 4 /tmp/data-with-10000-memories
(compile both checkouts first, `python -m compileall -q symbiote`, if PYTHONDONTWRITEBYTECODE is set).
"""

from __future__ import annotations

import asyncio
import random
import statistics
import subprocess
import sys
from pathlib import Path

from mcp import Client

# this directory is on sys.path when run as a script
from bench_core import synthetic_query
from mcp_client import timed_calls
from ports import wait_listening
from server_process import ServerProcess

WORDS = "project deadline coffee react python garden sister trip berlin budget meeting guitar running book movie dinner".split()


def make_query(rng: random.Random, i: int, style: str) -> str:
    if style == "bench_core":
        return synthetic_query(10_000 + i, rng)
    return " ".join(rng.choice(WORDS) for _ in range(4)) + f" {i}"


async def one_round(checkout: str, seed: int, data: str, style: str = "ab") -> list[float]:
    """Serve `data` from `checkout` (its own package, `python -m symbiote`), warm it, time 120 searches."""
    server = ServerProcess(
        Path(data),
        env={"LOG_LEVEL": "WARNING", "HF_HUB_OFFLINE": "1", "PYTHONPATH": checkout},
        stderr=subprocess.DEVNULL,
        command=[sys.executable, "-m", "symbiote"],
        cwd=checkout,
    )
    server.launch()
    try:
        await wait_listening(server.port, 0.05)
        rng = random.Random(seed)
        async with Client(server.mcp_url) as client:
            for i in range(20):
                await client.call_tool("search_memory", {"query": f"warm {i} {rng.choice(WORDS)}"})
            await asyncio.sleep(4)
            return await timed_calls(client, "search_memory", lambda i: {"query": make_query(rng, i, style)}, 120)
    finally:
        server.stop()


async def main() -> None:
    checkouts, rounds, data = sys.argv[1].split(","), int(sys.argv[2]), sys.argv[3]
    style = sys.argv[4] if len(sys.argv) > 4 else "ab"
    results: dict[str, list[float]] = {checkout: [] for checkout in checkouts}
    for index in range(rounds):
        for checkout in checkouts if index % 2 == 0 else checkouts[::-1]:
            results[checkout] += await one_round(checkout, index, data, style)
    for checkout, values in results.items():
        ordered = sorted(values)
        print(
            f"{checkout}: search p50 {statistics.median(ordered) * 1000:.1f} ms, "
            f"p95 {ordered[int(len(ordered) * 0.95)] * 1000:.1f} ms, n={len(ordered)}"
        )


if __name__ == "__main__":
    asyncio.run(main())
