"""store_memories (one batch) against store_memory (one call each), over real HTTP.

Starts `symbiote serve` on a fresh store and, for several rounds, stores 50 distinct memories
one by one and then 50 others in one `store_memories` call; prints the medians and the ratio
(target: the batch at least 2x faster).

Usage: .venv/bin/python benchmarks/batch.py [--rounds 5] [--size 50]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import synthetic_memory
from mcp_client import structured
from server_process import TempServer


async def run(rounds: int, size: int) -> None:
    import random

    from mcp import Client

    rng = random.Random(11)
    singles, batches = [], []
    with TempServer() as server:
        async with Client(server.mcp_url) as client:
            await client.call_tool("memory_stats", {})  # warm: store open, model loaded
            serial = 0
            for _ in range(rounds):
                started = time.perf_counter()
                for _ in range(size):
                    structured(await client.call_tool("store_memory", {"content": synthetic_memory(serial, rng)}))
                    serial += 1
                singles.append(time.perf_counter() - started)
                items = [{"content": synthetic_memory(serial + i, rng)} for i in range(size)]
                serial += size
                started = time.perf_counter()
                result = structured(await client.call_tool("store_memories", {"memories": items}))
                batches.append(time.perf_counter() - started)
                assert result["stored"] == size, result["message"]
    single, batch = statistics.median(singles), statistics.median(batches)
    print(f"{size} single store_memory calls: median {single * 1000:.0f} ms ({single * 1000 / size:.1f} ms each)")
    print(f"one store_memories call with {size}: median {batch * 1000:.0f} ms")
    print(f"batch is {single / batch:.1f}x faster (target >= 2x), {rounds} rounds")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--size", type=int, default=50)
    args = parser.parse_args()
    asyncio.run(run(args.rounds, args.size))


if __name__ == "__main__":
    main()
