"""The relevance model is data: its weights are read by feature name from relevance_model.json, a file
whose names are not the features the code computes is refused, and a handful of scores are pinned, so a
change to a feature or a weight that moves a score is seen here first (refit: docs/performance.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from symbiote.retrieval import ranking
from symbiote.retrieval.cohort import Closeness

C = ranking.Candidate
CANDIDATES = [
    C("a", 0.62, 1.0, 0.0, 1.02, "both"),
    C("b", 0.48, 0.0, 0.5, 0.6, "semantic"),
    C("c", 0.35, 0.3, 0.0, 0.47, "both"),
    C("d", 0.2, 0.0, 0.0, 0.2, "semantic"),
]
TEXTS = [
    "My accountant is Wendeline Marsh.",
    "Melanie: I painted a sunrise.",
    "User's sister is a nurse.",
    "Plays chess.",
]
PINNED = {
    ("who does my taxes?", "question"): [("a", 39.3), ("b", 8.0), ("c", 1.3), ("d", 1.1)],
    ("help me plan dinner", "request"): [("a", 51.0), ("b", 12.3), ("c", 2.1), ("d", 1.7)],
}


@pytest.mark.parametrize(("query", "intent"), list(PINNED))
def test_fixed_inputs_keep_their_scores(query: str, intent: str) -> None:
    evidence = ranking.QueryEvidence(closeness=Closeness(0.1, 0.08), activation=0.6, intent=intent)  # type: ignore[arg-type]
    judged = ranking.judge(query, CANDIDATES, evidence, TEXTS, 40)
    assert [(j.candidate.memory_id, j.score) for j in judged] == PINNED[(query, intent)]


def test_the_file_names_every_feature_the_code_computes() -> None:
    data = json.loads(ranking.MODEL_FILE.read_text())
    assert list(data["evidence"]) == [*ranking.EVIDENCE, "bias"]
    assert list(data["among"]) == [*ranking.AMONG, "bias"]
    assert data["fitted"] and data["by"]


@pytest.mark.parametrize(
    ("stage", "change"),
    [("evidence", {"drop": "holder"}), ("among", {"add": "recency"}), ("evidence", {"rename": ("gap", "behind")})],
)
def test_a_model_whose_names_do_not_match_is_refused(tmp_path: Path, stage: str, change: dict[str, object]) -> None:
    """A feature added without a refit would otherwise be multiplied by whatever weight sits in its place."""
    data = json.loads(ranking.MODEL_FILE.read_text())
    weights = data[stage]
    if "drop" in change:
        del weights[str(change["drop"])]
    if "add" in change:
        weights[str(change["add"])] = 1.0
    if "rename" in change:
        old, new = change["rename"]  # type: ignore[misc]
        weights[new] = weights.pop(old)
    path = tmp_path / "model.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=stage):
        ranking.load_model(path)
