"""What people actually type, against one person's memories: recall and junk per kind of query.

90 memories an assistant would keep about one person (preferences, projects, people, decisions,
routines) and 199 queries written the way people type them (`personal_set.json`): task
requests, vague questions, statements, attribute questions about known entities (stored, and
never stored), questions about things never stored, requests about things none of the
memories touches, and an assistant's reformulations as the control. Runs the real engine
in-process (real model, real Chroma, default cut-off).

For each kind it prints recall@1 and recall@5 (a wanted memory among the first 1 / 5 results)
and the junk rate: queries that return something of which nothing is wanted. For the questions
about what was never stored (`unknown_attribute`, `never`) the nearest memory marked
`match="context"` is an honest answer ("not stored; this is the nearest"): junk there counts
results given as answers, and `any` counts every result. The halves (even / odd query index)
are reported apart: `calibrate_context.py` fits on the even half, the odd half is held out.

    .venv/bin/python eval/personal_set.py              # the whole store
    .venv/bin/python eval/personal_set.py --fresh      # each query's main memory alone in a new store
    .venv/bin/python eval/personal_set.py --pad 2000   # plus 2,000 unrelated memories
    .venv/bin/python eval/personal_set.py --verbose    # every query's results
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import sys
import tempfile
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
# What the timing benchmarks share with the sets: the LoCoMo loader and the synthetic notes.
sys.path.insert(1, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from bench_core import synthetic_memory

from symbiote.config import Settings
from symbiote.memory import SearchRequest, StoreRequest
from symbiote.runtime import build_runtime

DATA = Path(__file__).resolve().parent / "personal_set.json"
KINDS = ("task", "vague", "message", "attribute", "assistant", "unknown_attribute", "never", "unrelated")
RAW = ("task", "vague", "message")  # what a person types, as opposed to an assistant's reformulation
NEGATIVE = ("unknown_attribute", "never", "unrelated")
ANSWERS_ONLY = ("unknown_attribute", "never")  # questions: the nearest memory marked as context is no junk


@dataclass
class Query:
    index: int
    kind: str
    text: str
    wanted: set[str]
    main: str | None = None  # the wanted memory listed first: the one it needs most


@dataclass
class Tally:
    asked: int = 0
    hit1: int = 0
    hit5: int = 0
    junk: int = 0
    any_result: int = 0
    lines: list[str] = field(default_factory=list)

    def row(self, negative: bool) -> str:
        n = max(self.asked, 1)
        if negative:
            return f"{'':>6} {'':>6} {self.junk / n:6.2f} {self.any_result / n:6.2f}  n={self.asked}"
        rates = f"{self.hit1 / n:6.2f} {self.hit5 / n:6.2f} {self.junk / n:6.2f} {self.any_result / n:6.2f}"
        return f"{rates}  n={self.asked}"


def load() -> tuple[dict[str, str], list[Query]]:
    data = json.loads(DATA.read_text())
    memories = {key: text for key, text in data["memories"]}
    queries = [
        Query(i, kind, text, set(wanted), wanted[0] if wanted else None)
        for i, (kind, text, wanted) in enumerate(data["queries"])
    ]
    return memories, queries


@contextlib.contextmanager
def new_engine() -> Iterator[Any]:
    """An engine on a new store in a temporary directory, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="symbiote-personal-") as tmp:
        settings = Settings(
            chromadb_path=Path(tmp) / "data",
            model_dir=Settings.from_env().model_dir,  # SYMBIOTE_MODEL_DIR, as the server reads it
            store_process=False,
        )
        engine = build_runtime(settings).engine
        try:
            yield engine
        finally:
            engine.close()


async def fill(engine: Any, texts: list[str]) -> dict[str, str]:
    """Store `texts` one by one; memory id -> text."""
    stored = {(await engine.store(StoreRequest(text))).memory_id: text for text in texts}
    await engine.passages_indexed()  # the passages follow the stores
    return stored


def score(query: Query, results: list[Any], key_of: dict[str, str], tally: Tally, verbose: bool) -> None:
    got = [key_of.get(r.memory_id, "?") for r in results]
    answers = [r for r in results if getattr(r, "match", "answer") == "answer"]
    tally.asked += 1
    tally.any_result += bool(results)
    if query.kind in NEGATIVE:
        tally.junk += bool(answers if query.kind in ANSWERS_ONLY else results)
    else:
        tally.hit1 += bool(got[:1] and got[0] in query.wanted)
        tally.hit5 += bool(set(got[:5]) & query.wanted)
        tally.junk += bool(results) and not set(got) & query.wanted
    if verbose:
        shown = ", ".join(
            f"{k}:{r.relevance_score:.0f}{'' if getattr(r, 'match', 'answer') == 'answer' else '(c)'}"
            for k, r in zip(got, results)
        )
        if query.kind in NEGATIVE:
            ok = "JUNK" if (answers if query.kind in ANSWERS_ONLY else results) else "ok  "
        else:
            ok = "ok  " if set(got[:5]) & query.wanted else "MISS"
        tally.lines.append(f"  {ok} [{query.kind}] {query.text!r}: {shown}")


async def whole_store(
    memories: dict[str, str], queries: list[Query], pad: int, verbose: bool, min_relevance: float | None = None
) -> dict[tuple[str, int], Tally]:
    with new_engine() as engine:
        if pad:
            rng = random.Random(3)
            await engine.store_many([synthetic_memory(i, rng) for i in range(min(pad, 100))])
            for start in range(100, pad, 100):
                await engine.store_many([synthetic_memory(i, rng) for i in range(start, min(start + 100, pad))])
        ids = await fill(engine, list(memories.values()))
        key_of = {memory_id: next(k for k, t in memories.items() if t == text) for memory_id, text in ids.items()}
        tallies: dict[tuple[str, int], Tally] = defaultdict(Tally)
        for q in queries:
            results = (await engine.search(SearchRequest(q.text, limit=5, min_relevance=min_relevance))).results
            score(q, results, key_of, tallies[(q.kind, q.index % 2)], verbose)
        return tallies


async def fresh_stores(memories: dict[str, str], queries: list[Query], verbose: bool) -> dict[tuple[str, int], Tally]:
    """Each memory alone in a new store, asked every query that needs it most (lists it first);
    every tenth one is also asked the negatives."""
    tallies: dict[tuple[str, int], Tally] = defaultdict(Tally)
    for position, (key, text) in enumerate(memories.items()):
        asking = [q for q in queries if q.main == key]
        if position % 10 == 0:
            asking += [q for q in queries if q.kind in NEGATIVE]
        if not asking:
            continue
        with new_engine() as engine:
            key_of = {memory_id: key for memory_id in await fill(engine, [text])}
            for q in asking:
                results = (await engine.search(SearchRequest(q.text, limit=5))).results
                alone = Query(q.index, q.kind, q.text, q.wanted & {key})
                score(alone, results, key_of, tallies[(q.kind, q.index % 2)], verbose)
    return tallies


def report(tallies: dict[tuple[str, int], Tally], verbose: bool) -> None:
    if verbose:
        for tally in tallies.values():
            print("\n".join(tally.lines))
    print(f"{'kind':<22}{'R@1':>6} {'R@5':>6} {'junk':>6} {'any':>6}")
    groups = [(kind, (kind,)) for kind in KINDS] + [("raw (task+vague+message)", RAW)]
    for label, kinds in groups:
        for half, name in ((None, ""), (0, " even"), (1, " odd")):
            merged = Tally()
            for (kind, h), t in tallies.items():
                if kind in kinds and (half is None or h == half):
                    for attr in ("asked", "hit1", "hit5", "junk", "any_result"):
                        setattr(merged, attr, getattr(merged, attr) + getattr(t, attr))
            if merged.asked:
                print(f"{label + name:<22}{merged.row(kinds[0] in NEGATIVE)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fresh", action="store_true", help="each query's first wanted memory alone in a new store")
    parser.add_argument("--pad", type=int, default=0, help="store this many unrelated memories first")
    parser.add_argument("--min-relevance", type=float, help="the cut-off (default: the engine's)")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    memories, queries = load()
    if args.fresh:
        tallies = asyncio.run(fresh_stores(memories, queries, args.verbose))
    else:
        tallies = asyncio.run(whole_store(memories, queries, args.pad, args.verbose, args.min_relevance))
    report(tallies, args.verbose)


if __name__ == "__main__":
    main()
