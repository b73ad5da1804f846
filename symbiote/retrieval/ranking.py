"""Hybrid ranking, and what `relevance_score` means.

Ranking: `cosine + 0.4 * bm25 / best_bm25 (+ 0.25 * topic_bm25 / best_topic_bm25 for a topic member)`. A weighted sum keeps
how strongly each retriever matched, not just the order, and beats reciprocal rank fusion on
LoCoMo (docs/performance.md). A memory found only by keywords gets the weakest
cosine of the semantic candidates (its own is lower still, by construction).

Relevance: `relevance_score = 100 * P(answerable) * exp(-(best - this) / 0.5)`.
- P(answerable) is the probability that the store holds what the question asks about, from a
  logistic model over three facts of the query's best candidates: the highest cosine, the share
  of the question's (IDF-weighted) words the best candidate contains, and whether the question
  is a recognised vague topic question whose best candidate belongs to the topic. Fitted by
  `benchmarks/calibrate_relevance.py` on LoCoMo (answerable), our assistant set (answerable)
  and never-stored questions, with answerable and never-stored weighted equally (a 50/50 prior).
- The factor after it discounts results by how far they rank below the best one: the top
  result carries P itself, a result well below it much less.
So a score of 60 on the top result means "about 60 % likely that this store knows the
answer, and this is the best place it has"; 30, the default cut-off, is where a result is more
likely noise than help.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, Sequence

from symbiote.storage.keywords import KeywordMatch
from symbiote.storage.base import Match

KEYWORD_WEIGHT = 0.4
TOPIC_BOOST = 0.25
SEMANTIC_FLOOR = 0.25  # below this cosine, meaning alone is not why a memory matched
RANK_DISCOUNT = 0.5

# Logistic model of P(answerable); refit with benchmarks/calibrate_relevance.py.
W_TOP_COSINE = 16.0
W_COVERAGE = 3.86
W_TOPIC = 13.44
BIAS = -7.81

MatchedBy = Literal["semantic", "keyword", "both", "topic"]


@dataclass(frozen=True)
class Candidate:
    memory_id: str
    cosine: float
    keyword: float  # BM25 relative to the best keyword match of this query, 0..1
    topic: float  # how strongly it carries the words of the question's topic, 0..1 (0: not a member)
    fused: float
    matched_by: MatchedBy


@dataclass(frozen=True)
class QueryEvidence:
    """Query-level facts P(answerable) is computed from."""

    top_cosine: float
    coverage: float  # IDF-weighted share of the question's words in the best candidate
    topic: float  # topic activation x membership strength when the best candidate is a topic member, else 0
    activation: float = 0.0  # the question's closeness to its topic (0 when it is not a topic question)

    def features(self) -> tuple[float, float, float]:
        return (self.top_cosine, self.coverage, self.topic)


def answerable(evidence: QueryEvidence) -> float:
    z = W_TOP_COSINE * evidence.top_cosine + W_COVERAGE * evidence.coverage + W_TOPIC * evidence.topic + BIAS
    return 1.0 / (1.0 + math.exp(-z))


def relevance_scores(candidates: Sequence[Candidate], evidence: QueryEvidence) -> list[float]:
    """`relevance_score` for each candidate (same order), 0-100."""
    if not candidates:
        return []
    p = answerable(evidence)
    best = candidates[0].fused
    scores = []
    for c in candidates:
        rank_share = math.exp(-(best - c.fused) / RANK_DISCOUNT)
        # A vague topic question ("what am I working on?") is answered by every memory of the
        # topic, not just the best one: a member keeps its share of the topic's strength.
        topic_share = min(evidence.activation, 1.0) * c.topic
        scores.append(round(min(100.0, 100.0 * p * min(max(rank_share, topic_share), 1.0)), 1))
    return scores


def fuse(
    dense: Sequence[Match], keyword: Sequence[KeywordMatch], topic_members: Sequence[KeywordMatch] = ()
) -> list[Candidate]:
    """Candidates from all retrievers, best first; ties go to the newer memory."""
    cosines = {m.memory_id: m.similarity for m in dense}
    floor = min(cosines.values()) if cosines else 0.0
    best_keyword = max((k.score for k in keyword), default=0.0)
    keywords = {k.memory_id: k.score / best_keyword for k in keyword} if best_keyword > 0 else {}
    best_member = max((k.score for k in topic_members), default=0.0)
    members = {k.memory_id: k.score / best_member for k in topic_members} if best_member > 0 else {}
    rows = []
    for memory_id in dict.fromkeys([*cosines, *keywords, *members]):
        cosine = cosines.get(memory_id, floor)
        lexical = keywords.get(memory_id, 0.0)
        topic = members.get(memory_id, 0.0)
        fused = cosine + KEYWORD_WEIGHT * lexical + TOPIC_BOOST * topic
        semantic = memory_id in cosines and cosine >= SEMANTIC_FLOOR
        how: MatchedBy = (
            "both" if semantic and lexical else "keyword" if lexical else "semantic" if semantic or not topic else "topic"
        )
        rows.append(Candidate(memory_id, cosine, lexical, topic, fused, how))
    # Equal scores (to 3 decimals): the newer memory first; ids sort by creation time.
    rows.sort(key=lambda c: (round(c.fused, 3), c.memory_id), reverse=True)
    return rows
