"""The engine's search path: candidates from meaning, keywords and topics, fused, scored and cut.

The retrieval rules themselves (`symbiote.retrieval`) know nothing of the store; this module
fetches what they need in as few trips to the store as possible and turns the scores into
search results, re-checking every filter on the memories themselves.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import replace
from pathlib import Path

import numpy as np

from symbiote.embedding.embedder import AsyncEmbedder
from symbiote.memory import validation
from symbiote.memory.records import SearchHit, SearchResults, public
from symbiote.memory.requests import SearchRequest
from symbiote.memory.statistics import Timer
from symbiote.memory.store_io import StoreIO
from symbiote.retrieval import Intent, TopicIndex, cohort, intent_of, load_lists, mentions, subjects_of, succession
from symbiote.retrieval.cohort import Cohort
from symbiote.retrieval.ranking import Judged, QueryEvidence, fusion, judge, with_members
from symbiote.retrieval.thresholds import (
    CANDIDATES,
    RELEVANCE_CUTOFF,
    SUBJECT_POOL,
    SUBJECT_STRENGTH,
    TOPIC_CANDIDATES,
)
from symbiote.storage import Candidate, MemoryFilter, MemoryStore, StoredMemory, content_hash
from symbiote.telemetry.stages import stage

log = logging.getLogger(__name__)

CHAIN_SHOWN = 3  # memories of one chain of updates among a search's results: the newest and two before it
RANK_PREFETCH = 15  # `rank` reads the contents a search for 5 results reads
SENTENCES_READ = 16  # sentences of long candidates embedded by a search at most: one batch, as long as one window


class MemorySearch:
    """Finds memories for a query; the topic questions and the background are embedded once, on first use."""

    def __init__(
        self,
        embedder: AsyncEmbedder,
        io: StoreIO[MemoryStore],
        timer: Timer,
        stored_tags: Callable[[], Awaitable[Iterable[str]]] | None = None,
        indexing: Callable[[], bool] = lambda: False,
        word_table: Path | None = None,
    ) -> None:
        """`indexing`: whether long memories' passages are still being indexed (said in the message).
        `word_table`: the folder of the word table the warm-up opens (`retrieval.load_lists`)."""
        self._word_table = word_table
        self._embedder = embedder
        self._indexing = indexing
        self._stored_tags = stored_tags  # every stored tag: a tag filter matches each spelling of its tags
        self._io = io
        self._timer = timer
        self._topics: TopicIndex | None = None
        self._background: Cohort | None = None

    async def search(self, request: SearchRequest) -> SearchResults:
        started = time.perf_counter()
        text = validation.query(request.query)
        count = validation.limit(request.limit, name="limit", high=20)
        cutoff = validation.min_relevance(request.min_relevance, RELEVANCE_CUTOFF)
        after_us, before_us = validation.time_window(request.after, request.before, request.when)
        where = validation.memory_filter(
            request.tags, request.tag_mode, request.type, request.min_confidence, after_us, before_us
        )
        if where.tags and self._stored_tags is not None:
            where = where.spelled(await self._stored_tags())
        candidates, evidence, found, vectors = await self._rank(text, where, prefetch=count * 3, vectors=True)
        scored = [c for c in candidates if c.memory_id in found]  # the likely ones: their texts were read
        texts = [found[c.memory_id].content for c in scored]
        judged = judge(text, scored, evidence, texts, len(candidates))
        kept = [j for j in judged if j.score >= cutoff]
        hits = await self._newer_first(_hits(kept, found, where, 3 * count), where, count)
        shown = {hit.memory_id for hit in hits}
        below = [j for j in judged if j.score < cutoff and j.candidate.memory_id not in shown]
        ordered = _under_cutoff(below, evidence.intent)
        offered = _hits(ordered, found, where, count - len(hits)) if len(hits) < count else []
        place = {j.candidate.memory_id: -float(i) for i, j in enumerate(ordered)}  # earlier: higher
        offered = newer_above(offered, {hit.memory_id: place[hit.memory_id] for hit in offered})
        later = await self._later_notes(text, hits + offered, found, vectors)
        hits, offered = later_above(hits, offered, later)
        self._timer.add(started)
        return SearchResults(
            query=text,
            results=hits,
            count=len(hits),
            message=_message(hits, offered, cutoff, evidence.intent) + (INDEXING if self._indexing() else ""),
            below_cutoff=offered,
        )

    async def _later_notes(
        self, text: str, view: list[SearchHit], found: dict[str, StoredMemory], held: dict[str, np.ndarray]
    ) -> dict[str, succession.Later]:
        """Among what the assistant reads, the later note answering the same question as each memory
        (`retrieval.succession`), by id. Their stored vectors came with the ranking (`held`, unit
        length) where the store holds them in memory; a trip reads the others. One embedding of the
        sentences long ones are read by, only when two of them may be about one thing."""
        notes = [found[hit.memory_id] for hit in view if hit.memory_id in found]
        if sum(not m.superseded_by for m in notes) < 2:
            return {}
        missing = [m.memory_id for m in notes if m.memory_id not in held]
        read_now = await self._io.read(MemoryStore.vectors, missing) if missing else {}
        vectors = {**held, **{mid: _unit(rows) for mid, rows in read_now.items() if len(rows)}}
        heads = [m.content for m in notes]
        read: dict[str, list[str]] = {}
        budget = SENTENCES_READ
        for memory in notes:  # best first: the likeliest long notes are read by their sentences
            read[memory.memory_id] = succession.sentences(text, memory.content, heads)[:budget]
            budget -= len(read[memory.memory_id])
        said = [sentence for chosen in read.values() for sentence in chosen]
        embedded = iter(await self._embedder.embed([text, *said], urgent=True))  # the query's from the cache
        asked = next(embedded)
        rows = []
        for memory in notes:
            own = [next(embedded) for _ in read[memory.memory_id]]
            stored = vectors.get(memory.memory_id)
            if stored is None:
                continue
            matrix = np.vstack([stored, _unit(np.asarray(own))]) if own else stored
            rows.append(
                succession.Note(
                    memory.memory_id,
                    memory.content,
                    memory.created_us,
                    matrix,
                    tuple(read[memory.memory_id]),
                    replaced=bool(memory.superseded_by),
                )
            )
        return succession.later_notes(text, asked / max(float(np.linalg.norm(asked)), 1e-9), rows)

    async def _newer_first(self, hits: list[SearchHit], where: MemoryFilter, count: int) -> list[SearchHit]:
        """The memories that replace a result (`superseded_by`) join it, and are never shown below it:
        a question the old fact answers is answered by the new one. One more trip when one is missing."""
        shown = {hit.memory_id for hit in hits}
        missing = [h.superseded_by for h in hits if h.superseded_by and h.superseded_by not in shown]
        if missing:
            found = await self._io.read(MemoryStore.get, list(dict.fromkeys(missing)))
            for hit in list(hits):
                newer = found.get(hit.superseded_by or "")
                if newer is not None and newer.memory_id not in shown and where.matches(newer):
                    shown.add(newer.memory_id)
                    fields = public(newer).model_dump()
                    hits.append(SearchHit(**fields, relevance_score=0, matched_by=hit.matched_by, match=hit.match))
        return few_of_each_chain(ordered_by_links(hits))[:count]

    async def rank(self, text: str, where: MemoryFilter | None = None) -> tuple[list[Candidate], QueryEvidence]:
        """All candidates for a query, best first, and the query-level evidence for scoring them."""
        candidates, evidence, _found, _vectors = await self._rank(text, where, prefetch=RANK_PREFETCH)
        return candidates, evidence

    async def _rank(
        self, text: str, where: MemoryFilter | None, prefetch: int, vectors: bool = False
    ) -> tuple[list[Candidate], QueryEvidence, dict[str, StoredMemory], dict[str, np.ndarray]]:
        """`rank`, plus the memories most likely to be returned (the first `prefetch` candidates and
        the leading topic members) and, with `vectors`, their stored vectors where the store holds
        them (`MemoryStore.search`). One trip to the store after the query is embedded: vectors,
        keywords and topic members, fused there with the ranking's weights sent down (`ranking.fusion`), then contents. The keyword search waits for the embedding rather than run beside it: the model has
        both cores to itself, and in the store process the keywords are searched beside the vectors."""
        io = self._io
        store, embedded, topics, cohort = await asyncio.gather(
            io.opened(), self._embedder.embed([text], urgent=True), self.topic_index(), self.background()
        )
        asked = embedded[0]
        topic = topics.match(asked)
        kind = intent_of(text)
        named = subjects_of(text)
        subject = named if kind == "request" else None
        words = list(topic.keywords) if topic else []
        # A request's subject: its members are marked among the leading candidates, whose contents
        # are read anyway (searching the whole store for the subject's words cost more than the rest).
        plan = replace(fusion(prefetch, SUBJECT_POOL if subject else 0), vectors=vectors)
        with stage("candidate search"):
            candidates, found, held = await io.read(
                MemoryStore.search, asked, text, CANDIDATES, words, TOPIC_CANDIDATES, where, plan
            )
        if not candidates:
            return [], QueryEvidence(), {}, {}
        if subject:
            pool = [c.memory_id for c in candidates[:SUBJECT_POOL]]
            candidates = with_members(
                candidates, {m for m in pool if m in found and mentions(found[m].content, subject.words)}
            )
        candidates = _annotated(candidates, found, named.particular if named else ())
        evidence = QueryEvidence(
            closeness=cohort.closeness(asked),
            activation=topic.activation if topic else 0.0,
            intent=kind,
            subject=SUBJECT_STRENGTH if subject else 0.0,
        )
        return candidates, evidence, found, held

    async def background(self) -> Cohort:
        if self._background is None:
            self._background = await cohort.embedded(self._embedder)
        return self._background

    async def word_lists(self) -> None:
        """Load the word lists scoring reads (`retrieval.load_lists`), in a thread: the warm-up starts
        it beside the model's load. A failure is logged: the first search then loads them, or says why."""
        try:
            await asyncio.to_thread(load_lists, self._word_table)
        except (ImportError, OSError, ValueError) as exc:
            log.warning("the word lists were not loaded ahead: %s", exc)

    async def topic_index(self) -> TopicIndex:
        if self._topics is None:
            self._topics = TopicIndex(await self._embedder.embed(TopicIndex.questions()))
        return self._topics


def _annotated(
    candidates: list[Candidate], found: dict[str, StoredMemory], particular: tuple[str, ...]
) -> list[Candidate]:
    """The topic members marked with whether they hold the particular thing the query names ("what's
    my cat's name?"): a memory without a cat is no member of the pets a question asks about."""
    if not particular:
        return candidates
    annotated = []
    for c in candidates:
        if c.topic > 0:
            memory = found.get(c.memory_id)
            c = c._replace(holds_named=memory is not None and mentions(memory.content, particular))
        annotated.append(c)
    return annotated


def _unit(rows: np.ndarray) -> np.ndarray:
    """Each row at unit length, as the store's copy in memory holds its vectors (`vectors.VectorRows.put`):
    the vectors read from Chroma and the sentences embedded here are read as the held ones are."""
    unit: np.ndarray = rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-9)
    return unit


def later_above(
    hits: list[SearchHit], offered: list[SearchHit], later: dict[str, succession.Later]
) -> tuple[list[SearchHit], list[SearchHit]]:
    """The results and below_cutoff with each memory a later note follows (`later`) marked with it
    (`newer_note`), and that note moved right above it when it was below. A later note the server is
    sure of, under the cut-off while the older is a result, joins the results with the older's score
    and match: it answers what the older answered, as a linked replacement does (`ordered_by_links`).
    Else each keeps its own score on its side of the cut-off."""
    if not later:
        return hits, offered
    hits, offered = list(hits), list(offered)
    for _ in range(len(offered)):  # along chains: a note followed by one followed by another
        lifted = False
        for older, (newer, sure) in later.items():
            above = {hit.memory_id: hit for hit in hits}
            below = {hit.memory_id: i for i, hit in enumerate(offered)}
            if sure and older in above and newer in below:
                taken = offered.pop(below[newer])
                update = {"relevance_score": above[older].relevance_score, "match": above[older].match}
                hits.insert(hits.index(above[older]), taken.model_copy(update=update))
                lifted = True
        if not lifted:
            break

    def ordered(part: list[SearchHit]) -> list[SearchHit]:
        for _ in range(len(part)):  # along chains
            moved = False
            for older, (newer, _sure) in later.items():
                at = {hit.memory_id: i for i, hit in enumerate(part)}
                if older in at and newer in at and at[newer] > at[older]:
                    part.insert(at[older], part.pop(at[newer]))
                    moved = True
            if not moved:
                break
        return [
            hit.model_copy(update={"newer_note": later[hit.memory_id].newer}) if hit.memory_id in later else hit
            for hit in part
        ]

    return ordered(hits), ordered(offered)


def few_of_each_chain(hits: list[SearchHit]) -> list[SearchHit]:
    """Of a chain of updates among the results, the newest and the two values before it: how it changed;
    older values would fill the results with one fact (the owner sees every one in the console)."""
    by_id = {hit.memory_id: hit for hit in hits}
    shown: dict[str, int] = {}
    kept = []
    for hit in hits:
        newest, seen = hit, {hit.memory_id}
        while newest.superseded_by in by_id and newest.superseded_by not in seen:
            newest = by_id[newest.superseded_by]
            seen.add(newest.memory_id)
        if shown.get(newest.memory_id, 0) < CHAIN_SHOWN:
            shown[newest.memory_id] = shown.get(newest.memory_id, 0) + 1
            kept.append(hit)
    return kept


def ordered_by_links(hits: list[SearchHit]) -> list[SearchHit]:
    """Best first, and a memory replaced by another shown right after it: the one replacing it
    scores at least as high (it answers what the older one answered), and comes first on a tie."""
    score = {hit.memory_id: hit.relevance_score for hit in hits}
    placed = newer_above(hits, score)
    return [hit.model_copy(update={"relevance_score": score[hit.memory_id]}) for hit in placed]


def newer_above(hits: list[SearchHit], key: dict[str, float]) -> list[SearchHit]:
    """`hits` by `key`, highest first, a memory replacing another never below it: along each chain of
    updates the newer takes the older's key when that is higher, and comes first on a tie. `key` is
    changed in place to the keys used."""
    by_id = {hit.memory_id: hit for hit in hits}
    for _ in range(len(hits)):  # along chains (a replaced memory replacing another)
        changed = False
        for hit in hits:
            newer = hit.superseded_by
            if newer in key and key[newer] < key[hit.memory_id]:
                key[newer] = key[hit.memory_id]
                changed = True
        if not changed:
            break

    def depth(hit: SearchHit) -> int:
        steps, current, seen = 0, hit, {hit.memory_id}
        while current.superseded_by in by_id and current.superseded_by not in seen:
            steps, current = steps + 1, by_id[current.superseded_by]
            seen.add(current.memory_id)
        return steps

    return sorted(hits, key=lambda hit: (-key[hit.memory_id], depth(hit)))


INDEXING = (
    " The newest long memories are still being indexed passage by passage: a search in a few seconds may"
    " find more in them."
)


def _under_cutoff(below: list[Judged], kind: Intent) -> list[Judged]:
    """What a search puts in view under the cut-off, in order: a question's by its score; a request's nearest
    in meaning first. A request's score weighs what is on its subject, which under the cut-off vouches for
    little: ordered by it, what is in view held the owner's memory less often than plain cosine's first
    few (phrases after 400 turns, docs/performance.md); a question's order by the score is far ahead of
    cosine's (LoCoMo's questions: 0.70 in view at 5 against 0.52), and is kept."""
    if kind != "request":
        return below
    return sorted(below, key=lambda j: j.candidate.cosine, reverse=True)


def _message(hits: list[SearchHit], offered: list[SearchHit], cutoff: float, kind: Intent) -> str:
    said = (
        f"{len(hits)} {'memory' if len(hits) == 1 else 'memories'} scored {cutoff:g} or more."
        if hits
        else f"No memory scored {cutoff:g} or more."
        if offered
        else "No stored memory matches this query."
    )
    if offered:
        order = "nearest in meaning first" if kind == "request" else "best first"
        said += f" {len(offered)} more in below_cutoff, each scored under {cutoff:g}, {order}."
    if hits or offered:
        said += JUDGE
    return said


JUDGE = (
    " Each is scored with the server's own chance that it is relevant: use any that plainly answers the"
    " question as asked, whatever its score; say it was never stored only when none of them does."
)


def _hits(kept: list[Judged], found: dict[str, StoredMemory], where: MemoryFilter, count: int) -> list[SearchHit]:
    """The first `count` judged candidates that resolve, pass the filter and say something new."""
    hits: list[SearchHit] = []
    seen: set[str] = set()
    if count <= 0:
        return hits
    for judged in kept:
        candidate, score, match = judged.candidate, judged.score, judged.match
        memory = found.get(candidate.memory_id)
        if memory is None or not where.matches(memory):
            continue
        digest = memory.content_hash or content_hash(memory.content)
        if digest in seen:  # never the same content twice
            continue
        seen.add(digest)
        hits.append(
            SearchHit(
                **public(memory).model_dump(), relevance_score=score, matched_by=candidate.matched_by, match=match
            )
        )
        if len(hits) == count:
            break
    return hits
