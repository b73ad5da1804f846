"""Fit what `relevance_score` means, on the real engine (in-process, real Chroma and model), on the
fitting half only, and show the held-out half beside it.

For every query the engine's own ranking (`MemoryEngine.rank`) gives its candidates and the
query's evidence; each of the leading candidates becomes one row of the model's three features
(`ranking.features`: standing above the background, share of the query's words, topic or subject
membership), labelled 1 when it is a wanted memory. Rows come from the fitting half of
`owners_set.json` (each owner's memories alone, and among 400 conversation turns) and from one
LoCoMo conversation (26); the held-out owners and conversation 30 are only ever reported.
Positives and negatives weigh the same in the fit, so 50 means "as likely relevant as not".

It prints the coefficients (to paste into symbiote/retrieval/ranking.py) and, for the fit and for
the coefficients in ranking.py, per half: direct questions and phrases shown, tasks R@5, never-stored
queries returning anything, LoCoMo R@5, all at the default cut-off of 30.

    .venv/bin/python benchmarks/calibrate_relevance.py [--cache rows.pickle] [--locomo DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import pickle
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import locomo_data  # noqa: E402
import owners_eval  # noqa: E402
from logistic import balanced_weights, fit_newton  # noqa: E402

from symbiote.retrieval import ranking  # noqa: E402

CUTOFF = 30.0
LEADING = 10  # candidates per query that become rows: those whose share of the query's words is known
PAD_TURNS = 400
TARGET = 0.95  # stored facts shown for direct questions in small stores (the relevance issue's target)


@dataclass
class Asked:
    group: str  # "owners:10", "owners:400", "locomo"
    kind: str  # the owners' query kind, or "locomo"
    half: str  # "fit" or "held"
    evidence: ranking.QueryEvidence
    candidates: list[ranking.Candidate]
    wanted: set[str]


async def collect_owners() -> list[Asked]:
    owners = owners_eval.load_owners(None, "both")
    turns = json.loads((owners_eval.HERE / "chatter.json").read_text())["turns"]
    asked: list[Asked] = []
    for pad in (0, PAD_TURNS):
        with owners_eval.new_engine() as engine:
            run = owners_eval.Run(engine, owners_eval.padding(turns, pad), None)
            await run.add([(f"c{i}", text) for i, text in enumerate(run.pad)])
            for owner in owners:
                keys = list(owner.memories)
                ids = await run.add(list(owner.memories.items()))
                id_of = dict(zip(keys, ids))
                for q in owner.queries:
                    candidates, evidence = await engine.rank(q.text)
                    wanted = {id_of[key] for key in q.wanted}
                    asked.append(Asked(f"owners:{pad}", q.kind, owner.half, evidence, candidates, wanted))
                await run.remove(ids)
        print(f"collected owners with {pad} turns", flush=True)
    return asked


async def collect_locomo(data_dir: Path) -> list[Asked]:
    asked: list[Asked] = []
    for path in sorted(data_dir.glob("*.json")):
        conv = locomo_data.load_conversation(path)
        with owners_eval.new_engine() as engine:
            owner: dict[str, set[str]] = {}
            for turn in conv.turns:
                stored = await engine.store(turn.memory)
                owner.setdefault(turn.dia_id, set()).add(stored.memory_id)
            await engine.passages_indexed()
            half = "fit" if conv.name.startswith("26") else "held"
            for q in conv.questions:
                candidates, evidence = await engine.rank(q.question)
                wanted = set().union(*(owner.get(e, set()) for e in q.evidence))
                asked.append(Asked("locomo", "locomo", half, evidence, candidates, wanted))
        print(f"collected {conv.name}", flush=True)
    return asked


def rows(asked: list[Asked]) -> tuple[np.ndarray, np.ndarray]:
    x, y = [], []
    for a in asked:
        for c in a.candidates[:LEADING]:
            x.append([*ranking.features(c, a.evidence), 1.0])
            y.append(1.0 if c.memory_id in a.wanted else 0.0)
    return np.array(x), np.array(y)


def fit(asked: list[Asked], prior: float = 1.0, l2: float = 1e-2) -> np.ndarray:
    """The coefficients, with the relevant rows weighing `prior` times the others in all."""
    x, y = rows(asked)
    return fit_newton(x, y, balanced_weights(y) * np.where(y == 1, prior, 1.0), l2=l2, iters=100)


def shown(asked: list[Asked], w: np.ndarray) -> float:
    """The share of stored facts shown for direct questions, each owner's memories alone."""
    picked = [a for a in asked if a.group == "owners:0" and a.kind == "direct"]
    return sum(bool(set(kept(a, w)) & a.wanted) for a in picked) / max(len(picked), 1)


def fit_to_target(asked: list[Asked], target: float = TARGET) -> tuple[float, np.ndarray]:
    """The smallest prior (1, 1.25, 1.5, ...) whose fit shows `target` of the fitting half's stored facts:
    the product's first promise is that a stored fact is shown; the prior says how much more a hidden
    fact costs than a shown stranger."""
    for prior in np.arange(1.0, 20.0, 0.25):
        w = fit(asked, prior)
        if shown(asked, w) >= target:
            return float(prior), w
    raise SystemExit(f"no prior up to 20 shows {target} of the fitting half's facts")


def kept(a: Asked, w: np.ndarray, limit: int = 5) -> list[str]:
    """What search_memory returns with these coefficients: scored, cut, best first."""
    scored = []
    for c in a.candidates:
        z = float(np.dot(w[:-1], ranking.features(c, a.evidence)) + w[-1])
        scored.append((1 / (1 + np.exp(-z)), c.memory_id))
    scored.sort(key=lambda pair: pair[0], reverse=True)  # stable: ties keep the fused order
    return [memory_id for p, memory_id in scored if 100 * p >= CUTOFF][:limit]


def report(asked: list[Asked], w: np.ndarray, label: str) -> None:
    print(f"\n{label}: " + ", ".join(f"{n}={v:.3f}" for n, v in zip(("standing", "keyword", "topic", "bias"), w)))
    groups = {
        "direct shown": lambda a: a.kind == "direct",
        "phrase shown": lambda a: a.kind == "phrase",
        "task R@5": lambda a: a.kind == "task",
        "never-stored any": lambda a: a.kind.startswith("never"),
        "LoCoMo R@5": lambda a: a.kind == "locomo",
    }
    print(f"  {'':24}" + "".join(f"{g + ' ' + h:>14}" for g in ("alone", "400 turns") for h in ("fit", "held")))
    for name, chosen in groups.items():
        cells = []
        for group in ("owners:0", "owners:400") if name != "LoCoMo R@5" else ("locomo",):
            for half in ("fit", "held"):
                picked = [a for a in asked if chosen(a) and a.half == half and a.group == group]
                if name.startswith("never"):
                    rate = sum(bool(kept(a, w)) for a in picked) / max(len(picked), 1)
                else:
                    rate = sum(bool(set(kept(a, w)) & a.wanted) for a in picked) / max(len(picked), 1)
                cells.append(f"{rate:.2f} (n={len(picked)})")
        print(f"  {name:24}" + "".join(f"{cell:>14}" for cell in cells))


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, help="reuse (or write) the collected candidates here")
    parser.add_argument(
        "--locomo",
        type=Path,
        default=locomo_data.DATA_DIR,
        help="LoCoMo conversations 26 and 30 (default: $SYMBIOTE_LOCOMO_DIR)",
    )
    args = parser.parse_args()
    if args.cache and args.cache.exists():
        asked = pickle.loads(args.cache.read_bytes())
    else:
        asked = await collect_owners() + await collect_locomo(locomo_data.data_dir(args.locomo))
        if args.cache:
            args.cache.write_bytes(pickle.dumps(asked))
    fitting = [a for a in asked if a.half == "fit"]
    report(asked, fit(fitting), "fitted on the fitting half, relevant and not weighing the same")
    prior, w = fit_to_target(fitting)
    report(asked, w, f"fitted on the fitting half, a relevant row weighing {prior:g} times (shows {TARGET} there)")
    current = np.array([ranking.W_STANDING, ranking.W_KEYWORD, ranking.W_TOPIC, ranking.BIAS])
    report(asked, current, "coefficients in ranking.py")


if __name__ == "__main__":
    asyncio.run(main())
