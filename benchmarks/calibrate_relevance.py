"""Fit and check what `relevance_score` means, on the real engine (in-process, real Chroma + model).

For every question we ask the engine's own ranking (`MemoryEngine.rank`) for its candidates and
the query-level evidence (top cosine, IDF coverage, topic), then fit P(answerable) with logistic
regression: label 1 for questions whose answer is stored (LoCoMo categories 1-4, our assistant
questions), 0 for questions about things never stored; both classes weighted equally.

It prints the coefficients (to paste into symbiote/retrieval/ranking.py) and, at the default cut-off of
30, LoCoMo recall@1/5/10, assistant recall@5, the junk rate on never-stored questions and the
seed case, for the fit on everything and for cross-fits (fit on one half, report on the other).

    .venv/bin/python benchmarks/calibrate_relevance.py
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import assistant_data  # noqa: E402  (memories, questions, never-stored questions)
import locomo_data  # noqa: E402
from logistic import balanced_weights, fit_newton  # noqa: E402

from symbiote.retrieval import ranking  # noqa: E402
from symbiote.config import Settings  # noqa: E402
from symbiote.runtime import build_runtime  # noqa: E402

CUTOFF = 30.0


@dataclass
class Asked:
    group: str  # "locomo:26.json", "assistant", "negative"
    half: int  # 0/1, for cross-fitting
    evidence: ranking.QueryEvidence
    candidates: list[ranking.Candidate]
    wanted: set[str]
    answerable: bool


async def collect() -> list[Asked]:
    asked: list[Asked] = []
    for conv in [locomo_data.load_conversation(p) for p in sorted(locomo_data.DATA_DIR.glob("*.json"))]:
        engine = await fresh_engine()
        owner: dict[str, set[str]] = {}
        for turn in conv.turns:
            stored = await engine.store(turn.memory)
            owner.setdefault(turn.dia_id, set()).add(stored.memory_id)
        half = 0 if conv.name.startswith("26") else 1
        for q in conv.questions:
            candidates, evidence = await engine.rank(q.question)
            wanted = set().union(*(owner.get(e, set()) for e in q.evidence))
            asked.append(
                Asked(f"locomo:{conv.name}", half, evidence, candidates, wanted, True)
            )
        engine.close()
        print(f"collected {conv.name}", flush=True)
    engine = await fresh_engine()
    ids = [(await engine.store(m)).memory_id for m in assistant_data.MEMORIES]
    for i, (question, wanted) in enumerate(assistant_data.QUESTIONS):
        candidates, evidence = await engine.rank(question)
        asked.append(
            Asked("assistant", i % 2, evidence, candidates, {ids[w] for w in wanted}, True)
        )
    for i, question in enumerate(assistant_data.NEGATIVES):
        candidates, evidence = await engine.rank(question)
        asked.append(Asked("negative", i % 2, evidence, candidates, set(), False))
    engine.close()
    return asked


async def fresh_engine():  # type: ignore[no-untyped-def]
    settings = Settings(chromadb_path=Path(tempfile.mkdtemp()) / "data", model_dir=Settings.from_env().model_dir)
    return build_runtime(settings).engine


def fit(rows: list[Asked], l2: float = 1e-2, iters: int = 100) -> np.ndarray:
    x = np.array([[*r.evidence.features(), 1.0] for r in rows])
    y = np.array([1.0 if r.answerable else 0.0 for r in rows])
    return fit_newton(x, y, balanced_weights(y), l2=l2, iters=iters)


def kept(row: Asked, w: np.ndarray, limit: int) -> list[str]:
    """What search_memory returns with these coefficients (the engine's own scoring)."""
    saved = (ranking.W_TOP_COSINE, ranking.W_COVERAGE, ranking.W_TOPIC, ranking.BIAS)
    ranking.W_TOP_COSINE, ranking.W_COVERAGE, ranking.W_TOPIC, ranking.BIAS = (float(v) for v in w)
    try:
        scores = [score for score, _match in ranking.relevance(row.candidates, row.evidence)]
    finally:
        ranking.W_TOP_COSINE, ranking.W_COVERAGE, ranking.W_TOPIC, ranking.BIAS = saved
    order = sorted(zip(row.candidates, scores), key=lambda pair: pair[1], reverse=True)
    return [c.memory_id for c, score in order if score >= CUTOFF][:limit]


def report(rows: list[Asked], w: np.ndarray, label: str) -> None:
    locomo_rows = [r for r in rows if r.group.startswith("locomo")]
    recall = {}
    for k in (1, 5, 10):
        recall[k] = sum(bool(set(kept(r, w, k)) & r.wanted) for r in locomo_rows) / max(len(locomo_rows), 1)
    assistant = [r for r in rows if r.group == "assistant"]
    a5 = sum(bool(set(kept(r, w, 5)) & r.wanted) for r in assistant) / max(len(assistant), 1)
    negatives = [r for r in rows if r.group == "negative"]
    junk = sum(bool(kept(r, w, 5)) for r in negatives) / max(len(negatives), 1)
    print(
        f"{label:<34} LoCoMo R@1/5/10 {recall[1]:.3f} {recall[5]:.3f} {recall[10]:.3f} (n={len(locomo_rows)})  "
        f"assistant R@5 {a5:.2f} (n={len(assistant)})  junk {junk:.2f} (n={len(negatives)})"
    )


async def main() -> None:
    import argparse
    import pickle

    parser = argparse.ArgumentParser()
    parser.add_argument("--cache", type=Path, help="reuse (or write) the collected candidates here")
    args = parser.parse_args()
    if args.cache and args.cache.exists():
        rows = pickle.loads(args.cache.read_bytes())
    else:
        rows = await collect()
        if args.cache:
            args.cache.write_bytes(pickle.dumps(rows))
    w = fit(rows)
    names = ("top_cosine", "coverage", "topic", "bias")
    print("fit on everything:", ", ".join(f"{n}={v:.3f}" for n, v in zip(names, w)))
    report(rows, w, "fit on all, reported on all")
    current = np.array([ranking.W_TOP_COSINE, ranking.W_COVERAGE, ranking.W_TOPIC, ranking.BIAS])
    report(rows, current, "coefficients in ranking.py")
    for half in (0, 1):
        train = [r for r in rows if r.half != half]
        test = [r for r in rows if r.half == half]
        report(test, fit(train), f"cross-fit, held-out half {half}")
    seed = next(r for r in rows if r.group == "assistant" and r.half == 0)  # index 0 is the seed question
    order = [c.memory_id for c in seed.candidates]
    rank = next((i + 1 for i, m in enumerate(order) if m in seed.wanted), None)
    print(f"seed 'what am I building?': first wanted memory at rank {rank}; kept at 30: {len(kept(seed, w, 5))} results")


if __name__ == "__main__":
    asyncio.run(main())
