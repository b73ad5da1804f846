"""What the assistant reads after a change: is the newer fact shown above the older, on many owners' lives?

Scores `update_lives.json` (written by `update_lives.py`) through the real engine in-process (real
model, real Chroma, defaults: limit 5, cut-off 30): one new store per owner, its memories stored
one by one in order, each with the time it was told (the memory's id and timestamp carry it), the
passages indexed, then every question asked. Beside it, plain cosine over the same memories: the
whole text's vector against the query's, top 5 (what mcp-memory-service does).

Per half (fit, held), the table of issue 68:
  new_in_view      the newer fact in what the assistant reads (results, then below_cutoff, 5 in all)
  new_in_results   the newer fact among the results above the cut-off
  newer_above      the newer fact in view, above the older one when that is in view too
  both             both in view (a count)
  old_replaced     of the questions where the older is in view: marked replaced by the newer
  old_marked       ... marked replaced or as an earlier note on the same subject (`newer_note`)
  offered          storing the newer fact linked it to the older, or offered the older (`may_replace`)
  alike_results    a look-alike's question finds its memory among the results / alike_view: in view
  alike_demoted    ... and its memory is shown below its look-alike marked as replaced or earlier by it
  false_links      links the server made between memories that are no update of the set
  read, tokens     memories in view per question, and the reply's size in tokens (characters / 4)
  reliability      each shown memory's relevance_score by bins of 20, against the share that answers
                   (the newer fact of an update question, the look-alike's own memory)

    .venv/bin/python eval/update_lives_eval.py                  # both halves, table and reliability
    .venv/bin/python eval/update_lives_eval.py --half fit --verbose
    .venv/bin/python eval/update_lives_eval.py --json eval/update_lives_results.json --label after
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from personal_set import new_engine

from symbiote.memory import SearchRequest, StoreRequest, instant_us
from symbiote.memory.ids import IdGenerator

HERE = Path(__file__).resolve().parent
DATA = HERE / "update_lives.json"
HALVES = ("fit", "held")
BINS = (0, 20, 40, 60, 80, 101)


class StatedTime(IdGenerator):
    """Ids carrying the time each memory was told, as the set states it (still unique and increasing)."""

    def __init__(self) -> None:
        super().__init__()
        self.at = 0

    def new(self) -> str:
        self._last = max(self.at, self._last + 1)
        return f"mem_{self._last:016d}0000"


def _marked(hit: Any) -> tuple[str | None, str | None]:
    """(replaced by, earlier note of): what a shown memory says of the newer one."""
    return getattr(hit, "superseded_by", None), getattr(hit, "newer_note", None)


async def _owner(owner: dict[str, Any], tally: Counter[str], bins: Counter[tuple[int, bool]], verbose: bool) -> None:
    with new_engine() as engine:
        clock = StatedTime()
        engine._writer._ids = clock  # the time each memory was told
        ids: dict[str, str] = {}
        offered: dict[str, list[str]] = {}
        for memory in owner["memories"]:
            clock.at = instant_us(memory["at"])
            result = await engine.store(StoreRequest(memory["text"]))
            ids[memory["id"]] = result.memory_id
            offered[memory["id"]] = [m.memory_id for m in getattr(result, "may_replace", [])]
        await engine.passages_indexed()
        key = {mid: k for k, mid in ids.items()}
        texts = [m["text"] for m in owner["memories"]]
        vectors = np.asarray(await engine._search._embedder.embed(texts))
        order = [m["id"] for m in owner["memories"]]

        async def cosine_top(query: str) -> list[str]:
            q = np.asarray(await engine._search._embedder.embed([query]))[0]
            return [order[i] for i in np.argsort(-(vectors @ q))[:5]]

        async def read(query: str) -> tuple[list[Any], list[Any], int]:
            found = await engine.search(SearchRequest(query))
            return found.results, found.below_cutoff, len(found.model_dump_json(exclude_none=True)) // 4

        expected = set()
        for case in owner["updates"]:
            old, new = ids[case["old"]], ids[case["new"]]
            expected.add(frozenset((old, new)))
            results, below, tokens = await read(case["query"])
            view = [h.memory_id for h in results + below]
            shown = {h.memory_id: h for h in results + below}
            for h in results + below:
                bins[(int(h.relevance_score) // 20, h.memory_id == new)] += 1
            tally["updates"] += 1
            tally["read"] += len(view)
            tally["tokens"] += tokens
            tally["new_in_view"] += new in view
            tally["new_in_results"] += new in {h.memory_id for h in results}
            above = new in view and (old not in view or view.index(new) < view.index(old))
            tally["newer_above"] += above
            tally["both"] += new in view and old in view
            if old in view:
                replaced, earlier = _marked(shown[old])
                tally["old_shown"] += 1
                tally["old_replaced"] += replaced == new
                tally["old_marked"] += replaced == new or earlier == new
            stored = await engine.get(old)
            tally["offered"] += stored.superseded_by == new or old in offered[case["new"]]
            plain = await cosine_top(case["query"])
            tally["cos_new_in_view"] += case["new"] in plain
            tally["cos_newer_above"] += case["new"] in plain and (
                case["old"] not in plain or plain.index(case["new"]) < plain.index(case["old"])
            )
            tally["cos_both"] += case["new"] in plain and case["old"] in plain
            tally[f"kind:{case['kind']}"] += 1
            tally[f"kind_above:{case['kind']}"] += above
            if verbose and not above:
                print(
                    f"  {owner['owner']} {case['kind']:12} {case['query']!r}: {[key.get(m, '?') for m in view]}"
                    f" scores {[h.relevance_score for h in results + below]} new={case['new']} old={case['old']}"
                )
        for case in owner["lookalikes"]:
            target = ids[case["target"]]
            others = case["other"] if isinstance(case["other"], list) else [case["other"]]
            results, below, tokens = await read(case["query"])
            view = [h.memory_id for h in results + below]
            shown = {h.memory_id: h for h in results + below}
            for h in results + below:
                bins[(int(h.relevance_score) // 20, h.memory_id == target)] += 1
            tally["alikes"] += 1
            tally["alike_read"] += len(view)
            tally["alike_tokens"] += tokens
            tally["alike_results"] += target in {h.memory_id for h in results}
            tally["alike_view"] += target in view
            by = _marked(shown[target]) if target in shown else (None, None)
            demoted = (
                any(ids[o] in view and view.index(ids[o]) < view.index(target) and ids[o] in by for o in others)
                if target in view
                else False
            )
            tally["alike_demoted"] += demoted
            tally["cos_alike"] += case["target"] in await cosine_top(case["query"])
            if verbose and (target not in view or demoted):
                print(
                    f"  {owner['owner']} ALIKE {case['kind']} {case['query']!r}: {[key.get(m, '?') for m in view]}"
                    f" target={case['target']} demoted={demoted}"
                )
        for k, mid in ids.items():
            stored = await engine.get(mid)
            if stored.superseded_by and frozenset((mid, stored.superseded_by)) not in expected:
                tally["false_links"] += 1
                if verbose:
                    print(f"  {owner['owner']} FALSE LINK {k} superseded_by {key.get(stored.superseded_by)}")


def figures(tally: Counter[str]) -> dict[str, Any]:
    u, a = max(tally["updates"], 1), max(tally["alikes"], 1)
    kinds = sorted(k.split(":", 1)[1] for k in tally if k.startswith("kind:"))
    return {
        "new_in_view": tally["new_in_view"] / u,
        "new_in_results": tally["new_in_results"] / u,
        "newer_above": tally["newer_above"] / u,
        "both": tally["both"],
        "old_replaced": tally["old_replaced"] / max(tally["old_shown"], 1),
        "old_marked": tally["old_marked"] / max(tally["old_shown"], 1),
        "offered": tally["offered"] / u,
        "alike_results": tally["alike_results"] / a,
        "alike_view": tally["alike_view"] / a,
        "alike_demoted": tally["alike_demoted"],
        "false_links": tally["false_links"],
        "read": (tally["read"] + tally["alike_read"]) / (u + a),
        "tokens": (tally["tokens"] + tally["alike_tokens"]) / (u + a),
        "cosine": {
            "new_in_view": tally["cos_new_in_view"] / u,
            "newer_above": tally["cos_newer_above"] / u,
            "both": tally["cos_both"],
            "alike_view": tally["cos_alike"] / a,
        },
        "by_kind": {k: f"{tally['kind_above:' + k]}/{tally['kind:' + k]}" for k in kinds},
        "updates": tally["updates"],
        "alikes": tally["alikes"],
    }


ROWS = (
    ("the newer fact in what the assistant reads (5 in all)", "new_in_view", "new_in_view"),
    ("the newer fact among the results above the cut-off", "new_in_results", None),
    ("the newer fact shown above the older, in what it reads", "newer_above", "newer_above"),
    ("both facts in what it reads (count)", "both", "both"),
    ("the older marked replaced, when shown", "old_replaced", None),
    ("the older marked replaced or earlier note, when shown", "old_marked", None),
    ("storing the newer linked or offered the older", "offered", None),
    ("look-alikes found among the results", "alike_results", None),
    ("look-alikes found in what it reads", "alike_view", "alike_view"),
    ("look-alikes shown below a memory marked as their newer", "alike_demoted", None),
    ("links the server made that are no update", "false_links", None),
    ("memories read per question", "read", None),
    ("tokens of a search's reply (chars / 4)", "tokens", None),
)


def table(results: dict[str, dict[str, Any]]) -> str:
    halves = list(results)
    head = "| | " + " | ".join(f"Symbiote {h} | cosine top 5 {h}" for h in halves) + " |"
    lines = [head, "|---" * (1 + 2 * len(halves)) + "|"]
    for label, row, cos in ROWS:
        cells = []
        for h in halves:
            value = results[h][row]
            cells.append(f"{value:.3f}" if isinstance(value, float) else str(value))
            plain = results[h]["cosine"][cos] if cos else "-"
            cells.append(f"{plain:.3f}" if isinstance(plain, float) else str(plain))
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines.append(
        "| cases | "
        + " | ".join(f"{results[h]['updates']} updates, {results[h]['alikes']} look-alikes | " for h in halves)
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--half", choices=(*HALVES, "both"), default="both")
    parser.add_argument("--owners", help="only these owners, comma-separated (L01,L02)")
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--json", type=Path, help="add the figures to this file, under --label")
    parser.add_argument("--label", default="run")
    args = parser.parse_args()
    data = json.loads(DATA.read_text())
    halves = HALVES if args.half == "both" else (args.half,)
    results: dict[str, dict[str, Any]] = {}
    reliability: dict[str, Any] = {}
    started = time.perf_counter()
    for half in halves:
        tally: Counter[str] = Counter()
        bins: Counter[tuple[int, bool]] = Counter()
        for owner in data["owners"]:
            if owner["half"] == half and (not args.owners or owner["owner"] in args.owners.split(",")):
                asyncio.run(_owner(owner, tally, bins, args.verbose))
        results[half] = figures(tally)
        reliability[half] = {
            f"{20 * b}-{20 * b + 19}": f"{bins[(b, True)]}/{bins[(b, True)] + bins[(b, False)]}" for b in range(5)
        }
        results[half]["reliability"] = reliability[half]
    print(table(results))
    for half in halves:
        print(f"{half} by kind (newer above): {results[half]['by_kind']}")
        print(f"{half} reliability (score bin: answering/shown): {reliability[half]}")
    print(f"{time.perf_counter() - started:.0f} s")
    if args.json:
        saved = json.loads(args.json.read_text()) if args.json.exists() else {}
        saved[args.label] = results
        args.json.write_text(json.dumps(saved, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
