"""Hybrid ranking, and what `relevance_score` means.

Ranking: `cosine + 0.4 * bm25 / best_bm25 (+ 0.25 * topic_bm25 / best_topic_bm25 for a topic member)`. A weighted sum keeps
how strongly each retriever matched, not just the order, and beats reciprocal rank fusion on
LoCoMo (docs/performance.md). A memory found only by keywords gets the weakest
cosine of the semantic candidates (its own is lower still, by construction).

Relevance is the chance that a memory is what the query needs, in one of two ways (`match`):
- As an answer: `100 * P(answerable) * exp(-(best - this) / 0.5)`. P(answerable) is the
  probability that the store holds what the question asks about, from a logistic model over
  three facts of the query's best candidates: the highest cosine, the share of the question's
  (IDF-weighted) words the best candidate contains, and whether the question is a recognised
  vague topic question whose best candidate belongs to the topic. Fitted by
  `benchmarks/calibrate_relevance.py` on LoCoMo (answerable), our assistant set (answerable)
  and never-stored questions, with answerable and never-stored weighted equally (a 50/50 prior).
  The factor after it discounts results by how far they rank below the best one. A vague
  question's topic members also score on their own (`topic_scores`), so a store of one memory
  answers "what am I building?" as a full one does.
- As context for a request ("help me write a script"): `100 * P(context) * exp(-(best - this) / 0.5)`,
  where P(context) is the probability that the store holds standing context for the request,
  from the candidate's own cosine, share of the request's words and membership of the subject
  the request names; fitted by `benchmarks/calibrate_context.py` the same way (requests with
  context stored against requests about things never stored, weighted equally).
A question's hit that does not hold what it asks (the dog for "what's my cat's name?") keeps its
score but is marked context, not answer. So a score of 60 on the top result means "about 60 %
likely that this store knows the answer, or holds context for the request, and this is the best
place it has"; 30, the default cut-off, is where a result is more likely noise than help.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, NamedTuple, Sequence

from symbiote.retrieval.intent import Intent
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

# Logistic model of P(context) for a request's candidates; refit with benchmarks/calibrate_context.py.
C_COSINE = 16.32
C_COVERAGE = 7.59
C_TOPIC = 2.80
C_BIAS = -6.00

# A question's hit holds its answer, not just what it names, from this share of its words or cosine
# (set by hand against the personal set's attribute questions, stored and not; docs/performance.md).
ANSWER_COVERAGE = 0.55
ANSWER_COSINE = 0.65

# A vague question's members: P(one of the memories it asks about) = sigmoid(slope * (closeness to
# the topic - midpoint)); set by hand (docs/performance.md): half at 0.7, 0.12 at the gate of 0.5.
TOPIC_MIDPOINT = 0.7
TOPIC_SLOPE = 10.0

MatchedBy = Literal["semantic", "keyword", "both", "topic"]
MatchKind = Literal["answer", "context"]


class Candidate(NamedTuple):
    """One memory a search found, with its evidence. A named tuple: a search's hundred-odd candidates
    cross from the store's process in every search, and a tuple pickles ten times faster than a
    dataclass (docs/performance.md)."""

    memory_id: str
    cosine: float
    keyword: float  # BM25 relative to the best keyword match of this query, 0..1
    topic: float  # how strongly it carries the words of the question's topic, 0..1 (0: not a member)
    fused: float
    matched_by: MatchedBy
    coverage: float = 0.0  # IDF-weighted share of the query's words it contains (the leading candidates only)
    holds_named: bool = True  # it holds the particular thing the query names ("cat"), or the query names none


@dataclass(frozen=True)
class QueryEvidence:
    """Query-level facts P(answerable) is computed from."""

    top_cosine: float
    coverage: float  # IDF-weighted share of the question's words in the best candidate
    topic: float  # topic activation x membership strength when the best candidate is a topic member, else 0
    activation: float = 0.0  # the question's closeness to its topic (0 when it is not a topic question)
    intent: Intent = "question"
    subject: float = 0.0  # how surely a request's words name a subject its members belong to (0: none)

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


def relevance(candidates: Sequence[Candidate], evidence: QueryEvidence) -> list[tuple[float, MatchKind]]:
    """Each candidate's `relevance_score` and what kind of match it is, same order: the better of
    its score as an answer and its score as context for a request."""
    answers = relevance_scores(candidates, evidence)
    topics = topic_scores(candidates, evidence)
    contexts = context_scores(candidates, evidence)
    judged: list[tuple[float, MatchKind]] = []
    for c, a, t, x in zip(candidates, answers, topics, contexts):
        if x > max(a, t):
            judged.append((x, "context"))
        else:
            judged.append((max(a, t), "answer" if t >= a or holds_answer(c) else "context"))
    return judged


def holds_answer(c: Candidate) -> bool:
    """Whether a question's hit likely holds what it asks: the particular thing it names, and most
    of its (IDF-weighted) words or much the same meaning. "How old is my sister?" finds the
    sister, who has no age stored, and "what's my cat's name?" the dog: each is the nearest
    memory, not an answer."""
    return c.holds_named and (c.coverage >= ANSWER_COVERAGE or c.cosine >= ANSWER_COSINE)


def topic_scores(candidates: Sequence[Candidate], evidence: QueryEvidence) -> list[float]:
    """For a vague question ("what am I building?"): each topic member's chance of being one of the
    memories it asks about, from the question's closeness to its topic and the member's share of
    the topic's words. It needs no other memory, so a store of one answers as a full one does.
    A question that names a particular thing ("what's my cat's name?") is not vague: a member
    that holds none of its words (the dog) is no answer to it."""
    if evidence.intent != "question" or not evidence.activation:
        return [0.0] * len(candidates)
    p = 1.0 / (1.0 + math.exp(-TOPIC_SLOPE * (evidence.activation - TOPIC_MIDPOINT)))
    return [round(min(100.0, 100.0 * p * c.topic), 1) if c.holds_named else 0.0 for c in candidates]


def context_scores(candidates: Sequence[Candidate], evidence: QueryEvidence) -> list[float]:
    """For a request: each candidate's score (0-100) as standing context it needs, same order.

    From the candidate's own evidence (its cosine, its share of the request's words, whether it
    belongs to the request's subject or topic), so a lone memory scores as it would among many;
    then discounted, like answers, by how far it ranks below the best candidate. A question gets
    none: for "what's my cat's name?" the nearest memory about something else is no help.
    """
    if not candidates or evidence.intent != "request":
        return [0.0] * len(candidates)
    best = candidates[0].fused
    strength = max(evidence.subject, min(evidence.activation, 1.0))
    scores = []
    for c in candidates:
        z = C_COSINE * c.cosine + C_COVERAGE * c.coverage + C_TOPIC * strength * c.topic + C_BIAS
        rank_share = math.exp(-(best - c.fused) / RANK_DISCOUNT)
        scores.append(round(min(100.0, 100.0 * rank_share / (1.0 + math.exp(-z))), 1))
    return scores


def with_members(candidates: Sequence[Candidate], members: set[str]) -> list[Candidate]:
    """The candidates with `members` marked as belonging to the request's subject, re-ranked: a
    memory belongs or not (how many of the subject's words it holds says little)."""
    rows = [
        c._replace(topic=1.0, fused=c.fused + TOPIC_BOOST * (1.0 - c.topic)) if c.memory_id in members else c
        for c in candidates
    ]
    rows.sort(key=lambda c: (round(c.fused, 3), c.memory_id), reverse=True)
    return rows


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


def shortlist(
    dense: Sequence[Match], keyword: Sequence[KeywordMatch], members: Sequence[KeywordMatch],
    covered: int, prefetch: int, pool: int = 0,
) -> tuple[list[Candidate], list[str], list[str]]:
    """What a search reads about its candidates once they are fused: the ranking, the leading
    `covered` whose share of the query's words counts, and those whose records are read: the first
    `prefetch` (the likely results), the first `pool` (a request's subject is marked among them) and
    up to `prefetch` topic members further down. The store runs it between its two stages
    (`MemoryStore.search`), so a search is one trip to the store's process."""
    candidates = fuse(dense, keyword, members)
    ids = [c.memory_id for c in candidates]
    further = [c.memory_id for c in candidates[prefetch:] if c.topic > 0][:prefetch]
    likely = list(dict.fromkeys([*ids[:prefetch], *ids[:pool], *further]))
    return candidates, ids[:covered], likely
