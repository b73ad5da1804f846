"""Fit what `relevance_score` means on the fitting half of the relevance sets, and report both halves
side by side, every ranking beside plain cosine over the same memories.

Reads the queries and candidates `relevance_sets.py` collected from the real engine (every store
kind), turns each query's leading candidates into rows of the model's features
(`symbiote.retrieval.ranking.evidence_rows`), labelled 1 when the candidate is a wanted memory, and fits a
logistic model with every store kind weighing the same and the classes at their natural shares: so
the score is a calibrated chance, not a balanced one. Prints the coefficients
(`--write` puts them, by name, in symbiote/retrieval/relevance_model.json), then per store kind and half: the reliability (score bin against share
relevant) and its expected calibration error, answer precision, never-stored questions with an
answer, and shown@5 / first against plain cosine; with `--plot`, a reliability plot (PNG).

    .venv/bin/python eval/relevance_sets.py --out /tmp/asked        # collect (about 10 minutes)
    .venv/bin/python eval/calibrate_relevance.py --asked /tmp/asked [--current] [--write] [--plot docs/reliability.png]
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import subprocess
import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import relevance_sets
from logistic import fit_newton
from relevance_sets import Asked

from symbiote.retrieval import ranking
from symbiote.retrieval.thresholds import SUBJECT_POOL

CUTOFF = 30.0
LIMIT = 5
PREFETCH = 15  # what a search for 5 results scores: symbiote/memory/searching.py's `count * 3`
BINS = (30, 40, 50, 60, 70, 80, 90, 101)
STORES = ("small", "facts100", "turns400", "mixed400", "5000", "locomo")

Scorer = Callable[[Asked], list[tuple[str, float, bool]]]  # (memory id, score 0-100, marked answer), best first


def scored(a: Asked) -> list[ranking.Candidate]:
    """The candidates a search for 5 results scores (`ranking.likely`): the others are never shown."""
    pool = SUBJECT_POOL if a.evidence.subject > 0 else 0
    keep = set(ranking.likely(a.candidates, PREFETCH, pool))
    return [c for c in a.candidates if c.memory_id in keep]


def first_rows(a: Asked) -> dict[str, tuple[float, ...]]:
    chosen = scored(a)
    rows = ranking.evidence_rows(a.query, chosen, a.evidence, [a.texts.get(c.memory_id, "") for c in chosen])
    return {c.memory_id: row for c, row in zip(chosen, rows)}


def first_odds(a: Asked, first: np.ndarray) -> dict[str, float]:
    return {m: float(np.dot(first[:-1], row) + first[-1]) for m, row in first_rows(a).items()}


def second_rows(a: Asked, first: np.ndarray) -> dict[str, tuple[float, ...]]:
    z = first_odds(a, first)
    return dict(zip(z, ranking.among_rows(list(z.values()), len(a.candidates))))


def fit(asked: list[Asked], l2: float = 1e-2) -> tuple[np.ndarray, np.ndarray]:
    """Both stages' coefficients (bias last), each store kind weighing the same, the classes at their shares."""
    first = fit_rows(asked, first_rows, l2)
    return first, fit_rows(asked, lambda a: second_rows(a, first), l2)


def fit_rows(asked: list[Asked], make: Callable[[Asked], dict[str, tuple[float, ...]]], l2: float) -> np.ndarray:
    x, y, store = [], [], []
    for a in asked:
        for memory_id, row in make(a).items():
            x.append([*row, 1.0])
            y.append(1.0 if memory_id in a.wanted else 0.0)
            store.append(a.store)
    counts: dict[str, int] = defaultdict(int)
    for s in store:
        counts[s] += 1
    weights = np.array([len(store) / (len(counts) * counts[s]) for s in store])
    return fit_newton(np.array(x), np.array(y), weights, l2=l2, iters=100)


def as_model(first: np.ndarray, second: np.ndarray) -> ranking.RelevanceModel:
    """Fitted coefficients (bias last) as the model `symbiote.retrieval.ranking` scores with."""
    return ranking.RelevanceModel(
        ranking.Weights(tuple(float(v) for v in first[:-1]), float(first[-1])),
        ranking.Weights(tuple(float(v) for v in second[:-1]), float(second[-1])),
    )


def as_arrays(model: ranking.RelevanceModel) -> tuple[np.ndarray, np.ndarray]:
    return np.array([*model.evidence.features, model.evidence.bias]), np.array(
        [*model.among.features, model.among.bias]
    )


def write_model(path: Path, first: np.ndarray, second: np.ndarray, prefix: Path, figures: dict[str, object]) -> None:
    """The fitted model as `ranking.load_model` reads it: weights by name, when, from which commit, the
    hash of the collected data it was fitted on, and its figures on both halves."""
    digest = hashlib.sha256()
    for store in STORES:
        part = Path(f"{prefix}.{store}")
        if part.exists():
            digest.update(part.read_bytes())
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False)
    data = {
        "fitted": datetime.date.today().isoformat(),
        "commit": commit.stdout.strip() or None,
        "by": "eval/calibrate_relevance.py on the fitting half of eval/relevance_sets.py",
        "data_sha256": digest.hexdigest(),
        "figures": figures,
        "evidence": {name: round(float(v), 3) for name, v in zip((*ranking.EVIDENCE, "bias"), first, strict=True)},
        "among": {name: round(float(v), 3) for name, v in zip((*ranking.AMONG, "bias"), second, strict=True)},
    }
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def model_scorer(first: np.ndarray, second: np.ndarray) -> Scorer:
    def score(a: Asked) -> list[tuple[str, float, bool]]:
        own = first_odds(a, first)
        rows = second_rows(a, first)
        out = []
        for memory_id, row in rows.items():
            z = float(np.dot(second[:-1], row) + second[-1])
            p = 100.0 / (1.0 + np.exp(-max(min(z, 50.0), -50.0)))
            answer = a.evidence.intent == "question" and p >= 50.0 and own[memory_id] >= 0.0  # as ranking.judge
            out.append((memory_id, p, answer))
        order = {c.memory_id: i for i, c in enumerate(a.candidates)}
        out.sort(key=lambda row: (-row[1], order[row[0]]))
        return out

    return score


def before_scorer(a: Asked) -> list[tuple[str, float, bool]]:
    """The score before the calibrated model (0.368 standing + 1.228 BM25 share + 1.516 topic - 1.602), for 'before'."""
    out = []
    for c in a.candidates:
        z = 0.368 * a.evidence.closeness.standing(c.cosine) + 1.228 * c.keyword
        z += 1.516 * ranking.topic_strength(c, a.evidence) - 1.602
        p = 100.0 / (1.0 + np.exp(-max(min(z, 50.0), -50.0)))
        out.append((c.memory_id, round(p, 1), a.evidence.intent == "question" and p >= 50.0))
    out.sort(key=lambda row: row[1], reverse=True)
    return out


def cosine_scorer(a: Asked) -> list[tuple[str, float, bool]]:
    ranked = sorted(a.candidates, key=lambda c: c.cosine, reverse=True)
    return [(c.memory_id, 100.0, False) for c in ranked]


def shown(scored: list[tuple[str, float, bool]], cutoff: float = CUTOFF) -> list[tuple[str, float, bool]]:
    return [row for row in scored if row[1] >= cutoff][:LIMIT]


def reliability(asked: Sequence[Asked], scorer: Scorer) -> tuple[list[tuple[int, int, float, float]], float]:
    """Per score bin of the shown results: (low, n, mean score, share relevant), and the expected calibration error."""
    cells: dict[int, list[tuple[float, bool]]] = defaultdict(list)
    for a in asked:
        for memory_id, score, _answer in shown(scorer(a)):
            low = max(b for b in BINS if b <= score)
            cells[low].append((score / 100, memory_id in a.wanted))
    table, total, error = [], sum(len(v) for v in cells.values()), 0.0
    for low in BINS[:-1]:
        rows = cells.get(low, [])
        if rows:
            mean = float(np.mean([s for s, _ in rows]))
            share = float(np.mean([r for _, r in rows]))
            table.append((low, len(rows), mean, share))
            error += len(rows) / total * abs(mean - share)
    return table, error


def rates(asked: Sequence[Asked], scorer: Scorer) -> dict[str, tuple[float, int]]:
    """The metrics of one store kind and half: name -> (rate, n)."""
    tallies: dict[str, list[int]] = defaultdict(lambda: [0, 0])

    def add(name: str, hit: bool) -> None:
        tallies[name][0] += hit
        tallies[name][1] += 1

    for a in asked:
        scored = scorer(a)
        results = shown(scored)
        ids = [row[0] for row in results]
        if a.kind.startswith("never"):
            add("never: any", bool(results))
            add("never: answer", any(row[2] for row in results))
        elif a.wanted:
            add(f"{a.kind} shown@5", bool(a.wanted & set(ids)))
            add(f"{a.kind} offered@5", bool(a.wanted & {row[0] for row in scored[:LIMIT]}))
            add(f"{a.kind} first", bool(scored) and scored[0][0] in a.wanted)
        for row in results:
            if row[2]:
                add("answer precision", row[0] in a.wanted)
    return {name: (hits / n, n) for name, (hits, n) in tallies.items()}


def report(asked: list[Asked], scorers: dict[str, Scorer]) -> None:
    for store in STORES:
        picked = {h: [a for a in asked if a.store == store and a.half == h] for h in ("fit", "held")}
        if not picked["fit"] and not picked["held"]:
            continue
        print(f"\n== {store}: {len(picked['fit'])} fit / {len(picked['held'])} held queries")
        figures = {(name, h): rates(picked[h], s) for name, s in scorers.items() for h in picked}
        names = sorted({m for f in figures.values() for m in f})
        header = "".join(f"{name + ' ' + h:>16}" for name in scorers for h in ("fit", "held"))
        print(f"  {'':22}{header}")
        for metric in names:
            cells = []
            for name in scorers:
                for h in ("fit", "held"):
                    rate = figures[(name, h)].get(metric)
                    cells.append(f"{rate[0]:.2f} (n={rate[1]})" if rate else "-")
            print(f"  {metric:22}" + "".join(f"{c:>16}" for c in cells))
        for name, scorer in scorers.items():
            if name == "cosine":
                continue
            for h in ("fit", "held"):
                table, error = reliability(picked[h], scorer)
                bins = "  ".join(f"{low}+:{share:.2f}/{mean:.2f}(n={n})" for low, n, mean, share in table)
                print(f"  {name} {h} ECE {error:.3f}  [bin: share relevant/mean score]  {bins}")


def plot(asked: list[Asked], scorer: Scorer, path: Path) -> None:
    """A reliability plot, drawn with Pillow (a dependency already): one line per store kind, held-out half."""
    from PIL import Image, ImageDraw

    size, margin = 520, 50
    image = Image.new("RGB", (size, size), "white")
    draw = ImageDraw.Draw(image)

    def at(x: float, y: float) -> tuple[float, float]:
        return margin + x * (size - 2 * margin), size - margin - y * (size - 2 * margin)

    draw.rectangle([at(0, 1), at(1, 0)], outline="black")
    draw.line([at(0, 0), at(1, 1)], fill=(150, 150, 150), width=1)
    for tick in range(0, 11, 2):
        draw.text(at(tick / 10, 0), f"{tick * 10}", fill="black", anchor="mt")
        draw.text(at(0, tick / 10), f"{tick / 10:.1f}", fill="black", anchor="rm")
    draw.text((size / 2, size - 15), "relevance_score shown (held-out half)", fill="black", anchor="mm")
    draw.text((10, 12), "share of those results that are relevant", fill="black")
    colours = [(31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40), (148, 103, 189), (140, 86, 75)]
    for index, store in enumerate(STORES):
        table, error = reliability([a for a in asked if a.store == store and a.half == "held"], scorer)
        points = [at(mean, share) for _low, n, mean, share in table if n >= 5]
        if len(points) > 1:
            draw.line(points, fill=colours[index], width=3)
        for x, y in points:
            draw.ellipse([x - 4, y - 4, x + 4, y + 4], fill=colours[index])
        draw.text((margin + 10, margin + 10 + 16 * index), f"{store} (ECE {error:.2f})", fill=colours[index])
    image.save(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--asked", type=Path, required=True, help="the prefix relevance_sets.py wrote")
    parser.add_argument("--current", action="store_true", help="also report the model in relevance_model.json")
    parser.add_argument("--before", action="store_true", help="also report the score before this model")
    parser.add_argument("--plot", type=Path, help="write the held-out half's reliability plot here (PNG)")
    parser.add_argument(
        "--write", action="store_true", help="write the fitted model to symbiote/retrieval/relevance_model.json"
    )
    args = parser.parse_args()
    asked = relevance_sets.load(args.asked)
    w, second = fit([a for a in asked if a.half == "fit"])
    w, second = as_arrays(as_model(np.round(w, 3), np.round(second, 3)))  # as the file keeps them
    print("evidence:", dict(zip((*ranking.EVIDENCE, "bias"), np.round(w, 3).tolist(), strict=True)))
    print("among:", dict(zip((*ranking.AMONG, "bias"), np.round(second, 3).tolist(), strict=True)))
    scorers: dict[str, Scorer] = {"fitted": model_scorer(w, second)}
    if args.current:
        scorers["current"] = model_scorer(*as_arrays(ranking.MODEL))
    if args.before:
        scorers["before"] = before_scorer
    scorers["cosine"] = cosine_scorer
    report(asked, scorers)
    if args.write:
        figures = {
            f"{store} {h}": {"ece": round(reliability(rows, scorers["fitted"])[1], 3), "queries": len(rows)}
            for store in STORES
            for h in ("fit", "held")
            if (rows := [a for a in asked if a.store == store and a.half == h])
        }
        write_model(ranking.MODEL_FILE, w, second, args.asked, figures)
        print(f"wrote {ranking.MODEL_FILE}")
    if args.plot:
        plot(asked, scorers["current" if args.current else "fitted"], args.plot)


if __name__ == "__main__":
    main()
