"""Does the right memory show, and does the score mean what it says? The real engine's own answers
(`search_memory` at its default cut-off), per store kind, the fitting half beside the held-out half,
every figure beside plain MiniLM cosine over the same memories.

The queries and stores are `relevance_sets.py`'s: 32 owners (`owners_set.json`, 7-12 memories and 18
queries each: direct questions, an assistant's phrases, raw task messages, never-stored questions on a
stored topic and off every topic), 48 holder cases (`holders_set.json`: whose memory it is, with
look-alikes), the 90 memories of `personal_set.json` and two LoCoMo conversations, in stores that are
small (3-12), 100 facts, facts after 400 LoCoMo turns, after 400 turns of three sources (LoCoMo,
chatter, assistant-written summaries) and after 5,000. Split once: fit on `fit`, report `held`.

Figures: `among results` = a wanted memory among the results (limit 5, cut-off 30); `in view@k` = among
the first k of what the search puts in view (results, then `below_cutoff`: 5 in all; `in view@1` is the
first); `cosine@k` = among plain cosine's first k over the same memories; `never answer` = a never-stored question got a result
marked `answer`; `answer precision` = share of `answer` results that are wanted; ECE = expected
calibration error of the shown results' scores (bins of 10 from 30), and the reliability table.

    .venv/bin/python eval/relevance_sets.py --out /tmp/asked          # collect (about 10 minutes)
    .venv/bin/python eval/owners_eval.py --asked /tmp/asked [--json figures.json]
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
DEPTHS = (1, 3, 5)


def tally(asked: Sequence[Asked]) -> dict[str, tuple[float, int]]:
    """name -> (rate, n) for one store kind and half. `in view@k`: a wanted memory among the first k of
    what the search put in view (results, then below_cutoff); `cosine@k`: among plain cosine's first k
    over the same memories; `among results`: among the results (cut-off 30)."""
    cells: dict[str, list[int]] = defaultdict(lambda: [0, 0])

    def add(name: str, hit: bool) -> None:
        cells[name][0] += hit
        cells[name][1] += 1

    for a in asked:
        shown = [memory_id for memory_id, _score, _match in a.results]
        view = shown + [memory_id for memory_id, _score, _match in a.offered]
        cosine = [c.memory_id for c in sorted(a.candidates, key=lambda c: c.cosine, reverse=True)[:5]]
        if a.kind.startswith("never"):
            add("never: any result", bool(shown))
            add("never: answer", any(match == "answer" for _id, _score, match in a.results))
        elif a.wanted:
            add(f"{a.kind} among results", bool(a.wanted & set(shown)))
            for k in DEPTHS:
                add(f"{a.kind} in view@{k}", bool(a.wanted & set(view[:k])))
                add(f"{a.kind} cosine@{k}", bool(a.wanted & set(cosine[:k])))
        for memory_id, _score, match in a.results:
            if match == "answer":
                add("answer precision", memory_id in a.wanted)
    return {name: (hits / n, n) for name, (hits, n) in cells.items()}


def below_cosine(figures: dict[str, tuple[float, int]]) -> list[str]:
    """The cells where what is in view holds a wanted memory less often than plain cosine's first k."""
    return [
        f"{name.split(' in view@')[0]}@{name.rsplit('@', 1)[1]}"
        for name, (rate, _n) in figures.items()
        if " in view@" in name and rate < figures[name.replace("in view@", "cosine@")][0]
    ]


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
        print("| query kind (n fit / held) | in view @1 @3 @5, fit / held | cosine @1 @3 @5 | among results |")
        print("|---|---|---|---|")
        kinds = sorted(
            {name.split(" ", 1)[0] for f in figures.values() for name in f if " in view@" in name}, key=_order
        )
        for kind in kinds:
            n = "/".join(str(figures[h].get(f"{kind} in view@1", (0, 0))[1]) for h in halves)
            cells = [
                " / ".join(" ".join(_rate(figures[h], f"{kind} {what}@{k}") for k in DEPTHS) for h in halves)
                for what in ("in view", "cosine")
            ]
            among = " / ".join(_rate(figures[h], f"{kind} among results") for h in halves)
            print(f"| {kind} ({n}) | {cells[0]} | {cells[1]} | {among} |")
        for name in ("answer precision", "never: answer", "never: any result"):
            print(f"| {name} | {' / '.join(_rate(figures[h], name) for h in halves)} | | |")
        for h in halves:
            print(f"| below cosine, {h} | {', '.join(below_cosine(figures[h])) or 'none'} | |")
        for h, (table, error) in calibration.items():
            bins = ", ".join(f"{row['bin']}: {row['relevant']:.2f} (n={row['n']})" for row in table)
            print(f"| ECE {h} | {error:.3f} | share relevant per score bin: {bins} |")
    return out


def _rate(figures: dict[str, tuple[float, int]], name: str) -> str:
    return f"{figures[name][0]:.2f}" if name in figures else "-"


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
