"""Where a store's and a search's time go, stage by stage, from the engine's own spans.

Runs the real engine in-process (the real model, Chroma in its store process) on a new data
directory, stores every turn of one LoCoMo conversation one after the other, waits until their
passages are indexed, then asks every question (limit 10) and `memory_stats` 100 times. Each call runs under a parent span;
the engine's child spans (`embedding`, `store store_new`, `keyword search`, `vector search`,
`candidate search`, `store search`...) are collected in memory with the OpenTelemetry SDK and printed as
p50 / p95 per stage. No server, no HTTP: add the MCP SDK and HTTP on top for the figures a
client sees (`vs_peer.py`).

    .venv/bin/python benchmarks/stages.py [--file 26.json] [--limit-turns N]

With `--store DIR` it searches a copy of a filled data directory instead (`bench_core.py --data
DIR` fills one with 10,000 notes): 300 of bench_core's queries (limit 5), stage by stage.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections import defaultdict
from pathlib import Path

# this directory is on sys.path when run as a script
from locomo_data import DATA_DIR, data_dir, load_conversation
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from percentiles import percentile

from symbiote.memory import SearchRequest, StoreRequest

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def _by_stage(exporter: InMemorySpanExporter, root: str) -> dict[str, list[float]]:
    """Milliseconds per child span name under each `root` span; the root's own under `root`."""
    spans = exporter.get_finished_spans()
    roots = {s.context.span_id for s in spans if s.name == root}
    stages: dict[str, list[float]] = defaultdict(list)
    for span in spans:
        if span.name == root or (span.parent is not None and span.parent.span_id in roots):
            stages[span.name].append((span.end_time - span.start_time) / 1e6)
    exporter.clear()
    return stages


def _print(title: str, stages: dict[str, list[float]], root: str) -> None:
    print(f"\n{title}")
    print("| stage | calls | p50 ms | p95 ms |")
    print("|---|---|---|---|")
    for name in sorted(stages, key=lambda n: (n == root, -(percentile(stages[n], 50) or 0))):
        values = stages[name]
        label = f"**the engine's {root}**" if name == root else name
        print(f"| {label} | {len(values)} | {percentile(values, 50):.1f} | {percentile(values, 95):.1f} |")


async def run_on_store(args: argparse.Namespace) -> None:
    """Searches of bench_core's kind on a copy of a filled data directory."""
    import random
    import shutil

    from bench_core import synthetic_query

    from symbiote.config import Settings
    from symbiote.runtime import build_runtime

    exporter, tracer = _tracing()
    rng = random.Random(7)
    with tempfile.TemporaryDirectory(prefix="symbiote-stages-") as tmp:
        shutil.copytree(args.store, Path(tmp) / "data")
        settings = Settings(chromadb_path=Path(tmp) / "data", model_dir=PROJECT_ROOT / "models" / "all-MiniLM-L6-v2")
        engine = build_runtime(settings).engine
        try:
            for i in range(20):
                await engine.search(SearchRequest(synthetic_query(i, rng), limit=5))
            await asyncio.sleep(4)  # the store process reads its vectors while nothing is asked
            exporter.clear()
            for i in range(300):
                with tracer.start_as_current_span("search"):
                    await engine.search(SearchRequest(synthetic_query(1000 + i, rng), limit=5))
            searches = _by_stage(exporter, "search")
            count = (await engine.stats()).total_memories
        finally:
            engine.close()
    _print(f"300 searches (limit 5) on {count} memories from {args.store}", searches, "search")


def _tracing() -> tuple[InMemorySpanExporter, trace.Tracer]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return exporter, trace.get_tracer("benchmarks.stages")


async def run(args: argparse.Namespace) -> None:
    from symbiote.config import Settings
    from symbiote.runtime import build_runtime

    exporter, tracer = _tracing()
    conv = load_conversation(data_dir(args.data) / args.file)
    turns = conv.turns[: args.limit_turns] if args.limit_turns else conv.turns
    with tempfile.TemporaryDirectory(prefix="symbiote-stages-") as tmp:
        settings = Settings(chromadb_path=Path(tmp) / "data", model_dir=PROJECT_ROOT / "models" / "all-MiniLM-L6-v2")
        engine = build_runtime(settings).engine
        try:
            await engine.search(SearchRequest("warm up the model and the store", limit=1))
            exporter.clear()
            for turn in turns:
                with tracer.start_as_current_span("store"):
                    await engine.store(StoreRequest(turn.memory))
            stores = _by_stage(exporter, "store")
            started = time.perf_counter()
            await engine.passages_indexed()
            drained = time.perf_counter() - started
            exporter.clear()
            for question in conv.questions:
                with tracer.start_as_current_span("search"):
                    await engine.search(SearchRequest(question.question, limit=10))
            searches = _by_stage(exporter, "search")
            for _ in range(100):
                with tracer.start_as_current_span("memory_stats"):
                    await engine.stats()
            stats = _by_stage(exporter, "memory_stats")
        finally:
            engine.close()
    _print(
        f"{len(turns)} stores, one after the other (their passages indexed {drained:.1f} s after the last)",
        stores,
        "store",
    )
    _print(f"{len(conv.questions)} searches (limit 10) on {len(turns)} memories, passages indexed", searches, "search")
    _print("100 memory_stats calls", stats, "memory_stats")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--file", default="26.json", help="the LoCoMo conversation (default: 26.json)")
    parser.add_argument(
        "--data", type=Path, default=DATA_DIR, help="the LoCoMo directory (default: $SYMBIOTE_LOCOMO_DIR)"
    )
    parser.add_argument("--limit-turns", type=int, help="store only the first N turns")
    parser.add_argument("--store", type=Path, help="search a copy of this filled data directory instead")
    args = parser.parse_args()
    asyncio.run(run_on_store(args) if args.store else run(args))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
