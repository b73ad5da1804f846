"""Hybrid ranking, and what `relevance_score` means.

Candidates: `cosine + 0.4 * bm25 / best_bm25 (+ 0.25 * topic_bm25 / best_topic_bm25 for a topic member)`.
A weighted sum keeps how strongly each retriever matched, not just the order, and beats
reciprocal rank fusion on LoCoMo (docs/performance.md). A memory found only by keywords gets the
weakest cosine of the semantic candidates (its own is lower still, by construction).

Relevance is the chance, in percent, that a candidate is relevant: calibrated, so results scored 80
are relevant about 80 times in 100, in a store of 6 memories and of 5,000 (docs/performance.md). Two
logistic stages, fitted by `eval/calibrate_relevance.py` on the fitting half of its sets (every
store kind weighing the same, the classes at their natural shares), their weights by name in
`relevance_model.json`:
- its own evidence (`EVIDENCE`): its cosine's standing above the query's cosines to a fixed
  background (`background.py`) and how far that is behind the best candidate's; its keyword
  evidence, BM25 share times the share of the query's information in English its words carry
  (`informative.py`: one common shared word is weak evidence); topic or subject membership; whether
  it is about whom a question asks (`holders.py`); whether the query is a request;
- that evidence among the other candidates (`AMONG`): its rank, how many stand as close, how far
  behind the best, how many candidates there are. How likely the best of three memories is relevant
  is not how likely the best of 5,000 is.
A question's result is an `answer` when it is more likely relevant than not on both stages, else
`context` (the nearest memory, for the assistant to say what is and is not stored); a request's
results are context. 30, the default cut-off, leaves out what is more likely noise than help.
"""

from __future__ import annotations

import bisect
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, NamedTuple

from symbiote.retrieval import holders
from symbiote.retrieval.cohort import Closeness
from symbiote.retrieval.informative import QueryWords
from symbiote.retrieval.intent import Intent, intent_of
from symbiote.retrieval.thresholds import KEYWORD_WEIGHT, RIVAL_SPAN, SEMANTIC_FLOOR, TOPIC_BOOST
from symbiote.storage import Candidate, Fusion, KeywordMatch, Match, fused
from symbiote.storage import likely as likely  # the candidates a search scores: eval/ and the tests ask here

MatchKind = Literal["answer", "context"]


@dataclass(frozen=True)
class QueryEvidence:
    """Query-level facts each candidate's relevance is judged with."""

    closeness: Closeness = Closeness(0.0, 1.0)  # the query's cosines to the background
    activation: float = 0.0  # the question's closeness to its topic (0 when it is not a topic question)
    intent: Intent = "question"
    subject: float = 0.0  # how surely a request's words name a subject its members belong to (0: none)


def topic_strength(c: Candidate, evidence: QueryEvidence) -> float:
    """How strongly a candidate belongs to the topic or subject the query names (0: not a member)."""
    if evidence.intent == "request":
        strength = max(evidence.subject, min(evidence.activation, 1.0))
    else:  # a vague question's member counts only if it holds what the question names
        strength = min(evidence.activation, 1.0) if c.holds_named else 0.0
    return strength * c.topic


# The model of P(relevant): its weights by feature name, with when, on what and how well they were fitted, in
# relevance_model.json, which eval/calibrate_relevance.py writes (docs/performance.md says how to refit).
# First stage: how strongly a candidate's own evidence says it is relevant (log-odds).
EVIDENCE = ("standing", "keyword", "topic", "holder", "gap", "request")
# Second stage: that evidence judged among the other candidates (its rank, how many stand as close,
# how far behind the best, how many candidates there are): a chance, calibrated in every store kind.
AMONG = ("evidence", "rank", "rivals", "behind", "candidates")
MODEL_FILE = Path(__file__).with_name("relevance_model.json")


class Weights(NamedTuple):
    """One logistic stage: a weight per feature, in the order the features are computed, and the bias."""

    features: tuple[float, ...]
    bias: float

    def log_odds(self, row: Sequence[float]) -> float:
        return sum(w * x for w, x in zip(self.features, row, strict=True)) + self.bias


class RelevanceModel(NamedTuple):
    """Both stages' weights, read by name: a file whose names are not the features computed here is refused."""

    evidence: Weights
    among: Weights


def _stage(weights: dict[str, float], names: tuple[str, ...], stage: str) -> Weights:
    if set(weights) != {*names, "bias"}:
        missing, extra = sorted({*names, "bias"} - set(weights)), sorted(set(weights) - {*names, "bias"})
        raise ValueError(f"{MODEL_FILE.name}: stage {stage!r} has no weight for {missing} and one for unknown {extra}")
    return Weights(tuple(float(weights[name]) for name in names), float(weights["bias"]))


def load_model(path: Path = MODEL_FILE) -> RelevanceModel:
    data = json.loads(path.read_text(encoding="utf-8"))
    return RelevanceModel(_stage(data["evidence"], EVIDENCE, "evidence"), _stage(data["among"], AMONG, "among"))


MODEL = load_model()


@dataclass(frozen=True)
class Judged:
    """A candidate's `relevance_score` and what kind of match it is."""

    candidate: Candidate
    score: float
    match: MatchKind


def evidence_rows(
    query: str, candidates: Sequence[Candidate], evidence: QueryEvidence, texts: Sequence[str]
) -> list[tuple[float, ...]]:
    """Each candidate's first-stage features (`EVIDENCE`), given the memories' texts: its standing above
    the background; its keyword evidence, its BM25 relative to the best match times the share of the
    query's information (in English, `informative`) its words carry, so one common word shared with
    a query is weak evidence however well it matches here; its topic or subject membership; whether it
    is about whom the query asks (`holders`); how far its standing is behind the best; and whether the
    query is a request."""
    words = QueryWords(query)
    asker = holders.of_query(query)
    # A request's context is anyone's ("help me plan my sister's party": the owner's own preferences count),
    # unless it asks about the owner ("user dietary restrictions"): then another speaker's line is not it.
    request = float(evidence.intent == "request")
    judged = not request or asker.kind == "owner"
    standings = [evidence.closeness.standing(c.cosine) for c in candidates]
    best = max(standings, default=0.0)
    rows: list[tuple[float, ...]] = []
    for c, standing, text in zip(candidates, standings, texts):
        holder = holders.agreement(asker, holders.of_memory(text), text) if judged else 0.0
        keyword = c.keyword * words.coverage(text) if c.keyword > 0 else 0.0
        rows.append((standing, keyword, topic_strength(c, evidence), holder, standing - best, request))
    return rows


def among_rows(evidence: Sequence[float], candidates: int) -> list[tuple[float, ...]]:
    """Each candidate's second-stage features (`AMONG`) from every scored candidate's first-stage log-odds."""
    ascending = sorted(evidence)
    best = ascending[-1] if ascending else 0.0
    many = math.log2(max(candidates, 1))
    rows: list[tuple[float, ...]] = []
    for z in evidence:
        rank = len(ascending) - bisect.bisect_right(ascending, z)  # how many stand above it
        rivals = bisect.bisect_right(ascending, z + RIVAL_SPAN) - bisect.bisect_left(ascending, z - RIVAL_SPAN) - 1
        rows.append((z, math.log2(1 + rank), math.log2(1 + rivals), z - best, many))
    return rows


def chances(
    query: str,
    candidates: Sequence[Candidate],
    evidence: QueryEvidence,
    texts: Sequence[str],
    total: int,
    model: RelevanceModel = MODEL,
) -> list[tuple[float, float]]:
    """Each candidate's chance of being relevant, same order: on its own evidence (the first stage) and
    among the other candidates (the second, the score); `total` is how many candidates the search found."""
    first = [model.evidence.log_odds(row) for row in evidence_rows(query, candidates, evidence, texts)]
    among = [_sigmoid(model.among.log_odds(row)) for row in among_rows(first, total)]
    return [(_sigmoid(own), p) for own, p in zip(first, among)]


def judge(
    query: str, candidates: Sequence[Candidate], evidence: QueryEvidence, texts: Sequence[str], total: int
) -> list[Judged]:
    """The candidates scored and ordered best first. A question's result is an `answer` when it is more
    likely relevant than not both on its own evidence and among the others (the best of three unrelated
    memories in a small store is likely only among them); a request's results are context."""
    judged = [
        Judged(c, round(100.0 * p, 1), "answer" if evidence.intent == "question" and min(own, p) >= 0.5 else "context")
        for c, (own, p) in zip(candidates, chances(query, candidates, evidence, texts, total))
    ]
    judged.sort(key=lambda j: j.score, reverse=True)  # stable: equal scores keep the fused order
    return judged


def meaning_relevance(query: str, texts: Sequence[str], cosines: Sequence[float], closeness: Closeness) -> list[float]:
    """The `relevance_score` (0-100) of texts found by meaning alone, as conversation turns are: the
    same model with no keyword or topic evidence, so a turn and a memory are on one scale."""
    candidates = [Candidate("", cosine, 0.0, 0.0, cosine, "semantic") for cosine in cosines]
    evidence = QueryEvidence(closeness=closeness, intent=intent_of(query))
    return [round(100.0 * p, 1) for _own, p in chances(query, candidates, evidence, texts, len(candidates))]


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(min(z, 50.0), -50.0)))


def with_members(candidates: Sequence[Candidate], members: set[str]) -> list[Candidate]:
    """The candidates with `members` marked as belonging to the request's subject, re-ranked: a
    memory belongs or not (how many of the subject's words it holds says little)."""
    rows = [
        c._replace(topic=1.0, fused=c.fused + TOPIC_BOOST * (1.0 - c.topic)) if c.memory_id in members else c
        for c in candidates
    ]
    rows.sort(key=lambda c: (round(c.fused, 3), c.memory_id), reverse=True)
    return rows


def fusion(prefetch: int, pool: int = 0) -> Fusion:
    """What a search sends down with its trip to the store: the fusion's weights (above) and how many
    candidates to read (`likely`). Data, so the store process runs none of this package's code."""
    return Fusion(KEYWORD_WEIGHT, TOPIC_BOOST, SEMANTIC_FLOOR, prefetch, pool)


def fuse(
    dense: Sequence[Match], keyword: Sequence[KeywordMatch], topic_members: Sequence[KeywordMatch] = ()
) -> list[Candidate]:
    """Candidates from all retrievers, best first, fused as a search's are in the store."""
    return fused(dense, keyword, topic_members, fusion(0))
