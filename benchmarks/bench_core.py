"""Core latency figures over real HTTP with the MCP SDK client.

Starts `symbiote serve` on a fresh data directory, then prints:
- store_memory p50/p95 (sequential, one client),
- search_memory p50/p95 at 1,000 and at 10,000 memories (sequential, distinct queries, so the
  embedding cache does not flatter the figures),
- an embedding-cache hit (the same query repeated).
Filling to 10,000 uses 8 concurrent clients. Takes a few minutes.

Usage: .venv/bin/python benchmarks/bench_core.py [--sizes 1000 10000] [--samples 200]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import signal
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import httpx
from mcp import Client

from ports import free_port  # this directory is on sys.path when run as a script

ROOT = Path(__file__).resolve().parent.parent
PEOPLE = ["Sarah", "my brother", "the team lead", "Dr. Patel", "my landlord", "Marco", "the client", "Aiko"]
TOPICS = [
    "the React dashboard", "our Postgres migration", "the trip to Lisbon", "marathon training", "the tax return",
    "the Rust CLI", "the kitchen renovation", "the quarterly roadmap", "learning Japanese", "the wedding playlist",
    "home network setup", "the sourdough starter", "the grant proposal", "the mobile app release", "piano lessons",
]
FACTS = [
    "prefers {p} to handle {t} on Mondays", "decided to pause {t} until spring", "asked {p} for feedback on {t}",
    "is worried about the budget for {t}", "finished the first draft of {t}", "wants {t} done before the holidays",
    "learned that {p} has strong opinions about {t}", "moved {t} to a new tool after problems",
]


def synthetic_memory(i: int, rng: random.Random) -> str:
    fact = rng.choice(FACTS).format(p=rng.choice(PEOPLE), t=rng.choice(TOPICS))
    return f"Note {i}: the user {fact} (detail #{rng.randint(1, 10_000)})."


def synthetic_query(i: int, rng: random.Random) -> str:
    return rng.choice(
        [
            f"what did we decide about {rng.choice(TOPICS)}?",
            f"who gives feedback on {rng.choice(TOPICS)}",
            f"anything about {rng.choice(PEOPLE)} and {rng.choice(TOPICS)} #{i}",
            f"status of {rng.choice(TOPICS)} {i}",
        ]
    )



def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def summary(name: str, values: list[float]) -> str:
    ms = [v * 1000 for v in values]
    return f"{name}: p50 {statistics.median(ms):.1f} ms, p95 {pct(ms, 0.95):.1f} ms, n={len(ms)}"


async def fill(url: str, start: int, stop: int, rng: random.Random, workers: int = 8) -> None:
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(start, stop):
        queue.put_nowait(i)

    async def worker() -> None:
        async with Client(url) as client:
            while not queue.empty():
                i = queue.get_nowait()
                result = await client.call_tool("store_memory", {"content": synthetic_memory(i, rng)})
                assert not result.is_error, result.content

    await asyncio.gather(*(worker() for _ in range(workers)))


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--data", type=Path, help="reuse this data directory (already filled stores are not refilled)")
    args = parser.parse_args()
    rng = random.Random(7)
    data = args.data or Path(tempfile.mkdtemp(prefix="symbiote-bench-")) / "data"
    port = free_port()
    env = {**os.environ, "CHROMADB_PATH": str(data), "PORT": str(port), "HF_HUB_OFFLINE": "1", "LOG_LEVEL": "WARNING"}
    proc = subprocess.Popen([str(ROOT / ".venv/bin/symbiote"), "serve"], env=env)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        for _ in range(300):
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health").json()["store"] in ("ready", "not_created"):
                    break
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.1)
        stored = int(httpx.get(f"http://127.0.0.1:{port}/health").json()["memories"] or 0)
        async with Client(url) as client:
            store_times = []
            for i in range(args.samples):
                started = time.perf_counter()
                result = await client.call_tool("store_memory", {"content": synthetic_memory(i, rng)})
                store_times.append(time.perf_counter() - started)
                assert not result.is_error
            stored += args.samples
            print(summary("store_memory", store_times))
        for size in args.sizes:
            if stored < size:
                began = time.perf_counter()
                await fill(url, stored, size, rng)
                print(f"filled to {size} memories in {time.perf_counter() - began:.0f} s")
                stored = size
            async with Client(url) as client:
                times = []
                for i in range(args.samples):
                    started = time.perf_counter()
                    result = await client.call_tool("search_memory", {"query": synthetic_query(i, rng), "limit": 5})
                    times.append(time.perf_counter() - started)
                    assert not result.is_error
                print(summary(f"search_memory at {size} memories", times))
                repeat = []
                for _ in range(50):
                    started = time.perf_counter()
                    await client.call_tool("search_memory", {"query": "what did we decide about the trip?"})
                    repeat.append(time.perf_counter() - started)
                print(summary(f"search_memory, repeated query (cache hit) at {size}", repeat))
                stats_times = []
                for _ in range(20):
                    started = time.perf_counter()
                    await client.call_tool("memory_stats", {})
                    stats_times.append(time.perf_counter() - started)
                print(summary(f"memory_stats at {size}", stats_times))
        stats = httpx.get(f"http://127.0.0.1:{port}/health").json()
        print(f"health after run: {stats['memories']} memories")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)


if __name__ == "__main__":
    asyncio.run(main())
