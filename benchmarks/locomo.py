"""LoCoMo retrieval benchmark through the real MCP server.

For each conversation file: start `symbiote serve` on a fresh temporary CHROMADB_PATH, store
every turn through `store_memory` (one memory per turn, "<session date> <speaker>: <text>",
with "[shares a photo of ...]" when the turn carries a photo caption), then ask every
category 1-4 question through `search_memory` (limit 10) and count a hit at k when any
evidence turn is among the first k results (and, as "offered", among the results followed by what
the server offers under its cut-off, `below_cutoff`). Prints recall@1/5/10 overall, per category and
per file, and the client-side search latency p50/p95.

The conversations are read from --data DIR or SYMBIOTE_LOCOMO_DIR (one file per conversation,
made from the LoCoMo release: see locomo_data.py). Usage:

    .venv/bin/python benchmarks/locomo.py --data DIR [--files 26.json 30.json] [--limit-questions N] [--port P]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# this directory is on sys.path when run as a script
from locomo_data import CATEGORIES, DATA_DIR, Conversation, data_dir, load_conversation
from mcp_client import passages_indexed, structured
from percentiles import percentile
from ports import free_port
from server_process import TempServer

KS = (1, 5, 10)


@dataclass
class Tally:
    hits: dict[int, int] = field(default_factory=lambda: {k: 0 for k in KS})
    total: int = 0

    def add(self, ranks: list[set[str]], evidence: set[str]) -> None:
        self.total += 1
        for k in KS:
            if any(ids & evidence for ids in ranks[:k]):
                self.hits[k] += 1

    def row(self) -> str:
        if not self.total:
            return "   n/a"
        return "  ".join(f"{self.hits[k] / self.total:.3f}" for k in KS) + f"  (n={self.total})"


async def run_file(
    conv: Conversation,
    port: int,
    limit_questions: int | None,
    totals: dict,
    latencies: list[float],
    min_relevance: float | None = None,
) -> None:
    from mcp import Client

    questions = conv.questions[:limit_questions] if limit_questions else conv.questions
    with TempServer(port, prefix="symbiote-locomo-") as server:
        async with Client(server.mcp_url, read_timeout_seconds=120) as client:
            owner: dict[str, set[str]] = {}  # memory_id -> dia_ids (a deduplicating server may reuse ids)
            t0 = time.perf_counter()
            for turn in conv.turns:
                stored = structured(await client.call_tool("store_memory", {"content": turn.memory}))
                owner.setdefault(stored["memory_id"], set()).add(turn.dia_id)
            store_s = time.perf_counter() - t0
            await passages_indexed(client)  # recall of the whole index: the passages follow the stores
            file_tally = Tally()
            for q in questions:
                t = time.perf_counter()
                query: dict[str, Any] = {"query": q.question, "limit": 10}
                if min_relevance is not None:
                    query["min_relevance"] = min_relevance
                found = structured(await client.call_tool("search_memory", query))
                latencies.append((time.perf_counter() - t) * 1000)
                ranks = [owner.get(r["memory_id"], set()) for r in found["results"]]
                offered = ranks + [owner.get(r["memory_id"], set()) for r in found.get("below_cutoff", [])]
                evidence = set(q.evidence)
                for key in ("all", f"cat{q.category}", conv.name):
                    totals.setdefault(key, Tally()).add(ranks, evidence)
                totals.setdefault("offered (results + below_cutoff)", Tally()).add(offered, evidence)
                file_tally.add(ranks, evidence)
            print(
                f"{conv.name}: stored {len(conv.turns)} turns in {store_s:.1f}s "
                f"({store_s * 1000 / max(len(conv.turns), 1):.1f} ms each); "
                f"recall@1/5/10 {file_tally.row()}",
                flush=True,
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", nargs="+", default=None, help="file names in the data dir (default: all *.json)")
    parser.add_argument("--limit-questions", type=int, default=None, help="ask at most N questions per file")
    parser.add_argument("--port", type=int, default=None, help="server port (default: a random free port)")
    parser.add_argument(
        "--min-relevance",
        type=float,
        default=None,
        help="pass min_relevance to search_memory (servers that support it)",
    )
    parser.add_argument(
        "--data", type=Path, default=DATA_DIR, help="the LoCoMo directory (default: $SYMBIOTE_LOCOMO_DIR)"
    )
    args = parser.parse_args(argv)
    args.data = data_dir(args.data)

    files = [args.data / f for f in args.files] if args.files else sorted(args.data.glob("*.json"))
    if not files:
        print(f"no LoCoMo files in {args.data}", file=sys.stderr)
        return 2
    totals: dict[str, Tally] = {}
    latencies: list[float] = []
    for path in files:
        conv = load_conversation(path)
        asyncio.run(
            run_file(conv, args.port or free_port(), args.limit_questions, totals, latencies, args.min_relevance)
        )

    print(f"\n{'':14}  R@1    R@5    R@10")
    print(f"{'overall':14}  {totals['all'].row()}")
    for cat, name in CATEGORIES.items():
        if f"cat{cat}" in totals:
            print(f"{f'{cat} {name}':14}  {totals[f'cat{cat}'].row()}")
    for path in files:
        print(f"{path.name:14}  {totals[path.name].row()}")
    print(f"{'offered':14}  {totals['offered (results + below_cutoff)'].row()}  (results + below_cutoff)")
    if latencies:
        p50, p95 = statistics.median(latencies), percentile(latencies, 95)
        print(f"\nsearch latency (client round trip, n={len(latencies)}): p50 {p50:.1f} ms, p95 {p95:.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
