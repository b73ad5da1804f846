"""Fit and check P(context): how likely a candidate is standing context a request needs.

Training data (`request_set.json`): requests and statements over the assistant set's 40
memories, each with the memories a good assistant would want in front of it, and requests about
things none of them touches. For every request the engine's own ranking (`MemoryEngine.rank`)
gives its candidates; each of the first 10 is a row (its cosine, its share of the request's
words, its subject or topic membership, how far it ranks below the best) labelled wanted or not.
A logistic regression over those rows gives the coefficients to paste into
symbiote/retrieval/ranking.py.

The personal set (`personal_set.json`, another person's memories and queries, written apart)
adds its even-indexed queries to the fit and is the check on its odd half: recall@1/5 and junk
per kind with the fitted coefficients and with the ones in ranking.py, scored exactly as
`search_memory` scores (the default cut-off of 30).

    .venv/bin/python benchmarks/calibrate_context.py [--cache /tmp/context-rows.pkl]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import pickle
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import assistant_data  # noqa: E402
import personal_set  # noqa: E402
from logistic import balanced_weights, fit_newton  # noqa: E402

from symbiote.retrieval import ranking  # noqa: E402

HERE = Path(__file__).resolve().parent
CUTOFF = 30.0
ROWS_PER_QUERY = 10
NAMES = ("cosine", "coverage", "topic", "bias")


@dataclass
class Asked:
    group: str  # "train" or a personal-set kind
    half: int
    text: str
    candidates: list[ranking.Candidate]
    evidence: ranking.QueryEvidence
    wanted: set[str]


async def ask_all(memories: list[str], queries: list[tuple[str, str, int, set[int]]]) -> list[Asked]:
    """Store `memories` in a new engine and rank every (group, text, half, wanted indexes) query."""
    with personal_set.new_engine() as engine:
        ids = [(await engine.store(text)).memory_id for text in memories]
        asked = []
        for group, text, half, wanted in queries:
            candidates, evidence = await engine.rank(text)
            asked.append(Asked(group, half, text, candidates, evidence, {ids[i] for i in wanted}))
        return asked


async def collect() -> list[Asked]:
    data = json.loads((HERE / "request_set.json").read_text())
    train = [("train", text, i % 2, set(wanted)) for i, (text, wanted) in enumerate(data["requests"])]
    train += [("train unrelated", text, i % 2, set()) for i, text in enumerate(data["unrelated"])]
    rows = await ask_all(assistant_data.MEMORIES, train)
    memories, queries = personal_set.load()
    keys = list(memories)
    held = [(q.kind, q.text, q.index % 2, {keys.index(k) for k in q.wanted}) for q in queries]
    return rows + await ask_all(list(memories.values()), held)


def features(c: ranking.Candidate, e: ranking.QueryEvidence) -> list[float]:
    strength = max(e.subject, min(e.activation, 1.0))
    return [c.cosine, c.coverage, strength * c.topic, 1.0]


def fit(rows: list[Asked]) -> np.ndarray:
    """One row per request, from its best candidate: does the store hold context for it (it names
    wanted memories) or not (an unrelated request); both classes weighted equally."""
    x, y = [], []
    for r in rows:
        if r.evidence.intent != "request" or not r.candidates:
            continue
        x.append(features(r.candidates[0], r.evidence))
        y.append(1.0 if r.wanted else 0.0)
    return fit_newton(np.array(x), np.array(y), balanced_weights(np.array(y)), l2=1e-2, iters=50)


def kept(r: Asked, w: np.ndarray) -> list[tuple[str, float, str]]:
    saved = (ranking.C_COSINE, ranking.C_COVERAGE, ranking.C_TOPIC, ranking.C_BIAS)
    ranking.C_COSINE, ranking.C_COVERAGE, ranking.C_TOPIC, ranking.C_BIAS = (float(v) for v in w)
    try:
        judged = ranking.relevance(r.candidates, r.evidence)
    finally:
        ranking.C_COSINE, ranking.C_COVERAGE, ranking.C_TOPIC, ranking.C_BIAS = saved
    order = sorted(zip(r.candidates, judged), key=lambda pair: pair[1][0], reverse=True)
    return [(c.memory_id, s, m) for c, (s, m) in order if s >= CUTOFF][:5]


def report(rows: list[Asked], w: np.ndarray, label: str) -> None:
    print(f"{label}: " + ", ".join(f"{n}={v:.2f}" for n, v in zip(NAMES, w)))
    groups: dict[str, list[Asked]] = {}
    for r in rows:
        groups.setdefault(r.group, []).append(r)
        if not r.group.startswith("train"):
            groups.setdefault("personal, all kinds", []).append(r)
        groups.setdefault("raw" if r.group in personal_set.RAW else "", []).append(r)
    for name, members in groups.items():
        if not name:
            continue
        hits1 = hits5 = junk = answers = 0
        for r in members:
            got = kept(r, w)
            ids = [m for m, _, _ in got]
            hits1 += bool(ids[:1] and ids[0] in r.wanted)
            hits5 += bool(set(ids) & r.wanted)
            junk += bool(ids) and not set(ids) & r.wanted
            answers += any(m == "answer" for _, _, m in got) and not set(ids) & r.wanted
        n = len(members)
        rates = f"R@1 {hits1 / n:.2f}  R@5 {hits5 / n:.2f}  junk {junk / n:.2f}  junk answers {answers / n:.2f}"
        print(f"  {name:<18} {rates}  (n={n})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, help="reuse (or write) the collected candidates here")
    args = parser.parse_args()
    if args.cache and args.cache.exists():
        rows = pickle.loads(args.cache.read_bytes())
    else:
        rows = asyncio.run(collect())
        if args.cache:
            args.cache.write_bytes(pickle.dumps(rows))
    train = [r for r in rows if r.group.startswith("train") or r.half == 0]
    held = [r for r in rows if not r.group.startswith("train") and r.half == 1]
    w = fit(train)
    report(train, w, "fitted on the request set and the personal set's even half; on those")
    report(held, w, "the same on the personal set's odd half (held out)")
    current = np.array([ranking.C_COSINE, ranking.C_COVERAGE, ranking.C_TOPIC, ranking.C_BIAS])
    report(held, current, "coefficients in ranking.py, on the odd half")
    print(f"(sigmoid at cosine 0.3, nothing else: {1 / (1 + math.exp(-(w[0] * 0.3 + w[3]))):.2f})")


if __name__ == "__main__":
    main()
