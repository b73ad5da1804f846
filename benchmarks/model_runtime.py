"""The int8 export (`export_model(quantize=True)`) against the served float one: speed and closeness.

Prints, for both graphs, the latency of embedding one text (p50/p95 per text, float and int8
interleaved, one intra-op thread as the server runs it) for a LoCoMo turn and for a short query
(a LoCoMo question), then the cosine between the two models' vectors (min, 1st percentile,
mean, worst text) over every LoCoMo turn and question, and over one- to three-word texts
(greetings, replies, bare topics: what chat and search boxes also get). Both graphs are exported
to a temporary directory unless given. The LoCoMo texts are read from
../shared/data/locomo-dev/ in place and never copied.

    .venv/bin/python benchmarks/model_runtime.py [--float DIR] [--int8 DIR] [--rounds N]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from locomo_data import DATA_DIR, load_conversation  # noqa: E402
from percentiles import percentile  # noqa: E402

from symbiote.embedding.model import OnnxEmbedder  # noqa: E402


# One- to three-word texts, where int8 error is largest (no long sequence to average it out).
SHORT_TEXTS = [
    "hi", "hmm", "thanks!", "yes", "no", "ok", "why?", "what?", "help", "bye", "lol", "cool",
    "hello there", "good morning", "tell me more", "sure, go ahead", "my dog", "Python", "React",
    "coffee", "Lisbon", "42", "?", "x",
]


def locomo_texts() -> tuple[list[str], list[str]]:
    """Every LoCoMo turn as stored (date, speaker, text) and every question, from all files."""
    turns: list[str] = []
    questions: list[str] = []
    for path in sorted(DATA_DIR.glob("*.json")):
        conv = load_conversation(path)
        turns += [turn.memory for turn in conv.turns]
        questions += [q.question for q in conv.questions]
    return turns, questions


def exported(given: Path | None, scratch: Path, quantize: bool) -> Path:
    """`given`, or a fresh export (float or int8) in `scratch`."""
    if given:
        return given
    from symbiote.embedding.export import export_model

    target = scratch / ("int8" if quantize else "float")
    print(f"exporting the {'int8' if quantize else 'float'} graph to {target} ...", flush=True)
    return export_model(target, quantize=quantize)


def latencies(models: dict[str, OnnxEmbedder], texts: list[str], rounds: int) -> dict[str, list[float]]:
    """Milliseconds per text for each model, the models taking turns on every text."""
    times: dict[str, list[float]] = {name: [] for name in models}
    for name, model in models.items():  # warm-up: the first runs allocate
        model.embed(texts[:3])
    for _ in range(rounds):
        for text in texts:
            for name, model in models.items():
                start = time.perf_counter()
                model.embed([text])
                times[name].append((time.perf_counter() - start) * 1000)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--float", dest="float_dir", type=Path, help="an exported float model (default: export one)")
    parser.add_argument("--int8", dest="int8_dir", type=Path, help="an exported int8 model (default: export one)")
    parser.add_argument("--rounds", type=int, default=3, help="passes over the timed texts (default 3)")
    parser.add_argument("--sample", type=int, default=100, help="turns and queries timed per pass (default 100)")
    args = parser.parse_args()
    logging.disable(logging.WARNING)

    turns, questions = locomo_texts()
    with tempfile.TemporaryDirectory(prefix="symbiote-model-runtime-") as scratch:
        models = {
            "float": OnnxEmbedder(exported(args.float_dir, Path(scratch), quantize=False)),
            "int8": OnnxEmbedder(exported(args.int8_dir, Path(scratch), quantize=True)),
        }
        print(f"\nper text, ms (one intra-op thread, interleaved, {args.rounds} passes)")
        print(f"{'':16s}{'float p50':>10s}{'p95':>8s}{'int8 p50':>10s}{'p95':>8s}{'ratio p50':>11s}")
        timed = {
            "LoCoMo turn": turns[:: max(1, len(turns) // args.sample)][: args.sample],
            "short query": questions[:: max(1, len(questions) // args.sample)][: args.sample],
        }
        for label, texts in timed.items():
            times = latencies(models, texts, args.rounds)
            f50, i50 = statistics.median(times["float"]), statistics.median(times["int8"])
            print(
                f"{label:16s}{f50:10.2f}{percentile(times['float'], 95):8.2f}"
                f"{i50:10.2f}{percentile(times['int8'], 95):8.2f}{i50 / f50:11.2f}"
            )
        texts = turns + questions
        sets = {
            f"{len(texts)} LoCoMo texts ({len(turns)} turns, {len(questions)} questions)": texts,
            f"{len(SHORT_TEXTS)} one- to three-word texts": SHORT_TEXTS,
        }
        cosines = {label: (models["float"].embed(t) * models["int8"].embed(t)).sum(axis=1) for label, t in sets.items()}
    print()
    for label, values in cosines.items():
        worst = sets[label][int(np.argmin(values))]
        print(
            f"cosine float vs int8 over {label}: min {values.min():.4f}, p1 {np.percentile(values, 1):.4f}, "
            f"mean {values.mean():.4f}; worst {worst[:60]!r}"
        )


if __name__ == "__main__":
    main()
