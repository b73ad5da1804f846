"""A search's candidates fused in the store: the one step of ranking that runs where the store runs.

A search is one trip to the store process: vectors and keywords are searched there, fused, and the
records most likely shown read (with their stored vectors, when the search asks: `Fusion.vectors`),
before the answer comes back (`MemoryStore.search`). The weights and
the limits of that fusion belong to the ranking (`symbiote.retrieval.ranking`, where they are set and
why) and come down with the search as data (`Fusion`), so the store process runs no code but its own.

Candidates: `cosine + keyword_weight * bm25 / best_bm25 (+ topic_boost * topic_bm25 / best_topic_bm25 for a
topic member)`. A memory found only by keywords gets the weakest cosine of the semantic candidates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple

from symbiote.storage.base import KeywordMatch, Match

MatchedBy = Literal["semantic", "keyword", "both", "topic"]


class Candidate(NamedTuple):
    """One memory a search found, with its evidence. A named tuple: a search's hundred-odd candidates
    cross from the store process in every search, and a tuple pickles ten times faster than a
    dataclass (docs/performance.md)."""

    memory_id: str
    cosine: float
    keyword: float  # BM25 relative to the best keyword match of this query, 0..1
    topic: float  # how strongly it carries the words of the question's topic, 0..1 (0: not a member)
    fused: float
    matched_by: MatchedBy
    holds_named: bool = True  # it holds the particular thing the query names ("cat"), or the query names none


@dataclass(frozen=True)
class Fusion:
    """How a search's candidates are fused and which of them are read: sent down with the search."""

    keyword_weight: float  # a keyword match's share of the fused score, at the best match
    topic_boost: float  # a topic member's, at the strongest member
    semantic_floor: float  # below this cosine, meaning alone is not why a memory matched
    prefetch: int  # the first of the fused ranking and of plain cosine whose records are read
    pool: int = 0  # the first whose records are read for a request's subject (0: no subject)
    vectors: bool = False  # their stored vectors come back too, where they are held (a search's later notes)


def fused(
    dense: Sequence[Match], keyword: Sequence[KeywordMatch], topic_members: Sequence[KeywordMatch], weights: Fusion
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
        fused = cosine + weights.keyword_weight * lexical + weights.topic_boost * topic
        semantic = memory_id in cosines and cosine >= weights.semantic_floor
        how: MatchedBy = (
            "both"
            if semantic and lexical
            else "keyword"
            if lexical
            else "semantic"
            if semantic or not topic
            else "topic"
        )
        rows.append(Candidate(memory_id, cosine, lexical, topic, fused, how))
    # Equal scores (to 3 decimals): the newer memory first; ids sort by creation time.
    rows.sort(key=lambda c: (round(c.fused, 3), c.memory_id), reverse=True)
    return rows


def likely(candidates: Sequence[Candidate], prefetch: int, pool: int = 0) -> list[str]:
    """The candidates a search scores (their texts are read): the first `prefetch` of the fused ranking and
    of plain cosine (so scoring never loses what meaning alone would show), the first `pool` (a request's
    subject is marked among them) and up to `prefetch` topic members further down."""
    ids = [c.memory_id for c in candidates]
    nearest = [c.memory_id for c in sorted(candidates, key=lambda c: c.cosine, reverse=True)[:prefetch]]
    further = [c.memory_id for c in candidates[prefetch:] if c.topic > 0][:prefetch]
    return list(dict.fromkeys([*ids[:prefetch], *nearest, *ids[:pool], *further]))
