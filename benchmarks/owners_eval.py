"""Does the right memory show, and does the score mean what it says? The real engine's own answers
(`search_memory` at its default cut-off), per store kind, the fitting half beside the held-out half,
every figure beside plain MiniLM cosine over the same memories.

The queries and stores are `relevance_sets.py`'s: 32 owners (`owners_set.json`, 7-12 memories and 18
queries each: direct questions, an assistant's phrases, raw task messages, never-stored questions on a
stored topic and off every topic), 48 holder cases (`holders_set.json`: whose memory it is, with
look-alikes), the 90 memories of `personal_set.json` and two LoCoMo conversations, in stores that are
small (3-12), 100 facts, facts after 400 LoCoMo turns, after 400 turns of three sources (LoCoMo,
chatter, assistant-written summaries) and after 5,000. Split once: fit on `fit`, report `held`.

Figures: `shown` = a wanted memory among the results (limit 5, cut-off 30); `offered` = among the
results or `below_cutoff`; `first` = the first result at min_relevance=0 is wanted; `cosine@5` and
`cosine first` = the same for plain cosine; `never answer` = a never-stored question got a result
marked `answer`; `answer precision` = share of `answer` results that are wanted; ECE = expected
calibration error of the shown results' scores (bins of 10 from 30), and the reliability table.

    .venv/bin/python benchmarks/relevance_sets.py --out /tmp/asked          # collect (about 10 minutes)
    .venv/bin/python benchmarks/owners_eval.py --asked /tmp/asked [--json figures.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import relevance_sets
from relevance_sets import KINDS, Asked

BINS = (30, 40, 50, 60, 70, 80, 90, 101)
FACT_KINDS = ("direct", "phrase", "task", "holder_owner", "holder_other", "locomo")


def tally(asked: Sequence[Asked]) -> dict[str, tuple[float, int]]:
    """name -> (rate, n) for one store kind and half."""
    cells: dict[str, list[int]] = defaultdict(lambda: [0, 0])

    def add(name: str, hit: bool) -> None:
        cells[name][0] += hit
        cells[name][1] += 1

    for a in asked:
        shown = [memory_id for memory_id, _score, _match in a.results]
        offered = shown + [memory_id for memory_id, _score, _match in a.offered]
        cosine = [c.memory_id for c in sorted(a.candidates, key=lambda c: c.cosine, reverse=True)[:5]]
        if a.kind.startswith("never"):
            add("never: any result", bool(shown))
            add("never: answer", any(match == "answer" for _id, _score, match in a.results))
        elif a.wanted:
            add(f"{a.kind} shown", bool(a.wanted & set(shown)))
            add(f"{a.kind} offered", bool(a.wanted & set(offered)))
            add(f"{a.kind} cosine@5", bool(a.wanted & set(cosine)))
            add(f"{a.kind} first", bool(a.ranked) and a.ranked[0] in a.wanted)
            add(f"{a.kind} cosine first", bool(cosine) and cosine[0] in a.wanted)
        for memory_id, _score, match in a.results:
            if match == "answer":
                add("answer precision", memory_id in a.wanted)
    return {name: (hits / n, n) for name, (hits, n) in cells.items()}


def reliability(asked: Sequence[Asked]) -> tuple[list[dict[str, Any]], float]:
    """Score bins of the shown results: n, mean score, share relevant; and the calibration error."""
    cells: dict[int, list[tuple[float, bool]]] = defaultdict(list)
    for a in asked:
        for memory_id, score, _match in a.results:
            cells[max(b for b in BINS if b <= score)].append((score / 100, memory_id in a.wanted))
    total = sum(len(rows) for rows in cells.values())
    table, error = [], 0.0
    for low in BINS[:-1]:
        rows = cells.get(low, [])
        if rows:
            mean = sum(s for s, _ in rows) / len(rows)
            share = sum(r for _, r in rows) / len(rows)
            table.append({"bin": f"{low}-{min(low + 10, 100)}", "n": len(rows), "mean": mean, "relevant": share})
            error += len(rows) / total * abs(mean - share)
    return table, error


def report(asked: list[Asked]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for store in KINDS:
        halves = {h: [a for a in asked if a.store == store and a.half == h] for h in ("fit", "held")}
        if not any(halves.values()):
            continue
        figures = {h: tally(rows) for h, rows in halves.items()}
        calibration = {h: reliability(rows) for h, rows in halves.items()}
        out[store] = {"figures": figures, "reliability": calibration}
        print(f"\n### {store} ({len(halves['fit'])} fit / {len(halves['held'])} held queries)\n")
        print("| | fit | held |\n|---|---|---|")
        names = sorted({name for f in figures.values() for name in f}, key=_order)
        for name in names:
            cells = [
                f"{figures[h][name][0]:.2f} (n={figures[h][name][1]})" if name in figures[h] else "-" for h in halves
            ]
            print(f"| {name} | " + " | ".join(cells) + " |")
        for h, (table, error) in calibration.items():
            bins = ", ".join(f"{row['bin']}: {row['relevant']:.2f} (n={row['n']})" for row in table)
            print(f"| ECE {h} | {error:.3f} | share relevant per score bin: {bins} |")
    return out


def _order(name: str) -> tuple[int, str]:
    kind = name.split(" ", 1)[0]
    return (FACT_KINDS.index(kind) if kind in FACT_KINDS else len(FACT_KINDS), name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--asked", type=Path, required=True, help="the prefix relevance_sets.py wrote")
    parser.add_argument("--json", type=Path, help="write every figure here")
    args = parser.parse_args()
    figures = report(relevance_sets.load(args.asked))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n")


if __name__ == "__main__":
    main()
