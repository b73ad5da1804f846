"""Core latency figures over real HTTP with the MCP SDK client.

Starts `symbiote serve` on a fresh data directory, then prints:
- store_memory p50/p95 (sequential, one client),
- search_memory p50/p95 at 1,000 and at 10,000 memories (sequential, distinct queries, so the
  embedding cache does not flatter the figures),
- an embedding-cache hit (the same query repeated), `memory_stats`,
- the floor: `prompts/get` of the personality, the MCP SDK and HTTP with no memory work.
Filling to 10,000 uses 8 concurrent clients (`--fill-batch 100`: `store_memories` of 100 each); after a fill the searches wait until the stored
memories' passages are indexed (they follow each store; the wait is printed). Takes a few minutes.

Usage: .venv/bin/python benchmarks/bench_core.py [--sizes 1000 10000] [--samples 200] [--fill-batch N]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
from pathlib import Path

import psutil
from mcp import Client

# this directory is on sys.path when run as a script
from mcp_client import passages_indexed, timed_calls
from percentiles import percentile
from server_process import ServerProcess

PEOPLE = ["Sarah", "my brother", "the team lead", "Dr. Patel", "my landlord", "Marco", "the client", "Aiko"]
TOPICS = [
    "the React dashboard",
    "our Postgres migration",
    "the trip to Lisbon",
    "marathon training",
    "the tax return",
    "the Rust CLI",
    "the kitchen renovation",
    "the quarterly roadmap",
    "learning Japanese",
    "the wedding playlist",
    "home network setup",
    "the sourdough starter",
    "the grant proposal",
    "the mobile app release",
    "piano lessons",
]
FACTS = [
    "prefers {p} to handle {t} on Mondays",
    "decided to pause {t} until spring",
    "asked {p} for feedback on {t}",
    "is worried about the budget for {t}",
    "finished the first draft of {t}",
    "wants {t} done before the holidays",
    "learned that {p} has strong opinions about {t}",
    "moved {t} to a new tool after problems",
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


def summary(name: str, values: list[float]) -> str:
    ms = [v * 1000 for v in values]
    return f"{name}: p50 {statistics.median(ms):.1f} ms, p95 {percentile(ms, 95):.1f} ms, n={len(ms)}"


async def fill(url: str, start: int, stop: int, rng: random.Random, workers: int = 8, batch: int = 1) -> None:
    """Store memories start..stop-1 from `workers` clients: one `store_memory` each, or
    `store_memories` of `batch` at a time."""
    queue: asyncio.Queue[range] = asyncio.Queue()
    for i in range(start, stop, batch):
        queue.put_nowait(range(i, min(i + batch, stop)))

    async def worker() -> None:
        async with Client(url, read_timeout_seconds=300) as client:
            while not queue.empty():
                part = queue.get_nowait()
                if batch == 1:
                    result = await client.call_tool("store_memory", {"content": synthetic_memory(part[0], rng)})
                else:
                    memories = [{"content": synthetic_memory(i, rng)} for i in part]
                    result = await client.call_tool("store_memories", {"memories": memories})
                assert not result.is_error, result.content

    await asyncio.gather(*(worker() for _ in range(workers)))


async def at_size(url: str, size: int, samples: int, rng: random.Random) -> None:
    """Print search (distinct queries, then one repeated) and memory_stats latency at this store size."""
    async with Client(url) as client:
        times = await timed_calls(
            client, "search_memory", lambda i: {"query": synthetic_query(i, rng), "limit": 5}, samples
        )
        print(summary(f"search_memory at {size} memories", times))
        repeat = await timed_calls(
            client, "search_memory", lambda _: {"query": "what did we decide about the trip?"}, 50, check=False
        )
        print(summary(f"search_memory, repeated query (cache hit) at {size}", repeat))
        stats_times = await timed_calls(client, "memory_stats", lambda _: {}, 100, check=False)
        print(summary(f"memory_stats at {size}", stats_times))
        floor = []
        for _ in range(100):
            started = time.perf_counter()
            await client.get_prompt("venom_identity")
            floor.append(time.perf_counter() - started)
        print(summary("the floor: prompts/get venom_identity", floor))


def rss_mb(pid: int) -> float:
    """Resident memory of a process and its children, in MB."""
    root = psutil.Process(pid)
    return sum(p.memory_info().rss for p in [root, *root.children(recursive=True)]) / 2**20


async def settle(url: str) -> float:
    async with Client(url) as client:
        return await passages_indexed(client, poll=0.1)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument(
        "--fill-batch",
        type=int,
        default=1,
        metavar="N",
        help="fill with store_memories of N memories (up to 100) instead of single stores",
    )
    parser.add_argument("--data", type=Path, help="reuse this data directory (already filled stores are not refilled)")
    args = parser.parse_args()
    rng = random.Random(7)
    data = args.data or Path(tempfile.mkdtemp(prefix="symbiote-bench-")) / "data"
    with ServerProcess(data, env={"HF_HUB_OFFLINE": "1", "LOG_LEVEL": "WARNING"}) as server:
        stored = int(server.health()["memories"] or 0)
        async with Client(server.mcp_url) as client:
            store_times = await timed_calls(
                client, "store_memory", lambda i: {"content": synthetic_memory(i, rng)}, args.samples
            )
            stored += args.samples
            print(summary("store_memory", store_times))
        for size in args.sizes:
            if stored < size:
                began = time.perf_counter()
                await fill(server.mcp_url, stored, size, rng, batch=args.fill_batch)
                print(
                    f"filled to {size} memories in {time.perf_counter() - began:.0f} s; "
                    f"their passages indexed {await settle(server.mcp_url):.1f} s later; "
                    f"server RSS {rss_mb(server.proc.pid):.0f} MB (with its store process)"
                )
                stored = size
            await at_size(server.mcp_url, size, args.samples, rng)
        print(f"health after run: {server.health()['memories']} memories")


if __name__ == "__main__":
    asyncio.run(main())
