"""A keyword search asked of SQLite against the same search from held word scores, on a filled index.

Copies the keyword index of a data directory (`bench_core.py --data DIR` fills one), asks 300 of
`bench_core`'s queries with nothing held (SQLite scores the matches; a rare word, a number, is
held at once, as in a server), holds their words as the
store's process does between requests (`idle_step`), then asks them again: prints both p50 / p95,
the time the holding took, and whether every result (ids, scores, order) is the same.

    .venv/bin/python benchmarks/keyword_scores.py DIR
"""

from __future__ import annotations

import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

# this directory is on sys.path when run as a script
from bench_core import synthetic_query
from percentiles import percentile
from symbiote.storage.keywords import LexicalIndex


def timed(index: LexicalIndex, queries: list[str]) -> tuple[list[float], list[list[tuple[str, float]]]]:
    times, results = [], []
    for query in queries:
        started = time.perf_counter()
        found = index.search(query, 50)
        times.append((time.perf_counter() - started) * 1000)
        results.append([(m.memory_id, m.score) for m in found])
    return times, results


def main() -> int:
    source = Path(sys.argv[1]) / "symbiote_keywords.sqlite3"
    rng = random.Random(7)
    queries = [synthetic_query(i, rng) for i in range(300)]
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / source.name
        shutil.copy(source, copy)
        index = LexicalIndex(copy)
        asked_times, asked = timed(index, queries)
        started = time.perf_counter()
        steps = 0
        while index.idle_step():
            steps += 1
        holding = time.perf_counter() - started
        held_times, held = timed(index, queries)
        memories = index.count()
        index.close()
    print(f"{len(queries)} bench_core queries on the keyword index of {memories} memories ({sys.argv[1]})")
    print(f"asked of SQLite: p50 {percentile(asked_times, 50):.2f} ms, p95 {percentile(asked_times, 95):.2f} ms")
    print(f"held words:      p50 {percentile(held_times, 50):.2f} ms, p95 {percentile(held_times, 95):.2f} ms")
    print(f"holding them took {holding * 1000:.0f} ms in {steps + 1} idle steps; results the same: {asked == held}")
    return 0 if asked == held else 1


if __name__ == "__main__":
    sys.exit(main())
