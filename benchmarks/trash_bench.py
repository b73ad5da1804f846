"""The trash and the owner's statistics at 11,000 memories, through the engine with the store in
its own process (as `symbiote serve` runs it). Prints figures, asserts nothing.

Memories are imported with vectors (nothing embedded), then: the owner's statistics; a page's
selection (25) deleted, the trash listed, the selection restored; every memory deleted at once
("all N matching"), the trash listed, all restored, then all deleted again and the trash emptied.

    .venv/bin/python benchmarks/trash_bench.py [--memories 11000]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from symbiote.config import PROJECT_ROOT, Settings
from symbiote.memory import (
    OWNER,
    now_us,
)
from symbiote.memory.writing import draft
from symbiote.runtime import build_runtime


async def timed(label: str, work: object, repeat: int = 1) -> object:
    took = []
    result = None
    for _ in range(repeat):
        started = time.perf_counter()
        result = await work()  # type: ignore[operator]
        took.append((time.perf_counter() - started) * 1000)
    figure = f"{statistics.median(took):8.0f} ms" + (f" (median of {repeat})" if repeat > 1 else "")
    print(f"{label:<52} {figure}")
    return result


async def main(count: int) -> None:
    rng = np.random.default_rng(7)
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(chromadb_path=Path(tmp) / "data", model_dir=PROJECT_ROOT / "models" / "all-MiniLM-L6-v2")
        engine = build_runtime(settings).engine
        try:
            start = now_us() - count * 60_000_000
            items = []
            for i in range(count):
                vector = rng.standard_normal((1, 384)).astype(np.float32)
                vector /= np.linalg.norm(vector)
                memory = replace(
                    draft(
                        f"Benchmark memory {i}: note number {i} about topic {i % 97}.", None, None, None, None, False
                    ),
                    memory_id=f"mem_{start + i * 60_000_000:016d}0000",
                    created_us=start + i * 60_000_000,
                )
                items.append((memory, vector))
            began = time.perf_counter()
            for at in range(0, count, 1000):
                await engine.bulk.import_memories(items[at : at + 1000])
            print(f"{count} memories imported with vectors in {time.perf_counter() - began:.1f} s")
            await timed("owner_stats, first (one metadata scan, then texts)", engine.owner_stats)
            await timed("owner_stats again (the metadata kept current)", engine.owner_stats, repeat=5)
            page = [m.memory_id for m, _v in items[-25:]]
            await timed("delete a page's selection (25) to the trash", lambda: engine.trash.move(page, OWNER))
            await timed("owner_stats after that write (no new scan)", engine.owner_stats)
            await timed("trash page 1 (25 of 25)", lambda: engine.trash.page(0, 25), repeat=5)
            await timed("restore the 25", lambda: engine.trash.restore(page))
            everything = [m.memory_id for m, _v in items]
            ids = await timed("all matching: the ids of every memory", lambda: engine.bulk.matching_ids(None, 100_000))
            assert len(ids[0]) == count  # type: ignore[index]
            await timed(f"delete all {count} to the trash", lambda: engine.trash.move(everything, OWNER))
            await timed(f"trash page 1 (25 of {count})", lambda: engine.trash.page(0, 25), repeat=5)
            await timed(f"restore all {count}", lambda: engine.trash.restore(everything))
            await engine.trash.move(everything, OWNER)
            await timed(f"empty the trash ({count})", lambda: engine.trash.purge(None))
        finally:
            engine.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=11_000)
    asyncio.run(main(parser.parse_args().memories))
