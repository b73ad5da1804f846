"""Retrieval behaviour: hybrid search, honest relevance, dedup, time filters, index consistency.

Real model, real Chroma, real FTS5 index. These pin behaviour, not benchmark numbers (those
are in benchmarks/locomo.py and eval/owners_eval.py).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from symbiote.config import Settings
from symbiote.errors import InvalidInputError
from symbiote.memory import MemoryEngine, SearchRequest, StoreRequest, iso_utc, timeparse
from symbiote.retrieval.ranking import fuse
from symbiote.runtime import Runtime
from symbiote.storage import SIDE_DATABASE_FILE, KeywordMatch, Match, MemoryStore, StoredMemory, content_hash
from tests.conftest import make_runtime

MEMORIES = [
    "I'm working on a React app with TypeScript and authentication",
    "I love building web apps with React",
    "User prefers dark roast coffee, black, no sugar.",
    "User is vegetarian and avoids mushrooms.",
    "User's sister Anna lives in Lisbon and works as an architect.",
    "Decided to use PostgreSQL instead of MySQL for the billing service because of its JSONB support.",
    "User's birthday is on 14 March.",
    "User's dog is a border collie named Biscuit.",
    "User's manager is Priya Shah.",
    "User moved to Berlin in 2022.",
    "User plays guitar in a jazz trio on Thursday evenings.",
    "User edits code in Neovim with the LazyVim configuration.",
    "User is saving for a house deposit, goal: end of 2026.",
    "User reads mostly science fiction; favourite author is Ursula K. Le Guin.",
    "The weekly team standup is on Mondays at 9:30.",
    "User is allergic to penicillin.",
    "User's favourite cuisine is Thai, especially green curry.",
    "User meditates for ten minutes every evening with Headspace.",
    "User prefers British English spelling in documents.",
    "User drives a 2019 Toyota Corolla hybrid.",
]


@pytest.fixture
async def engine(engine: MemoryEngine) -> MemoryEngine:
    """The `engine` fixture (tests/conftest.py) with MEMORIES stored."""
    for memory in MEMORIES:
        await engine.store(StoreRequest(memory))
    return engine


async def contents(engine: MemoryEngine, query: str, **options: object) -> list[str]:
    return [hit.content for hit in (await engine.search(SearchRequest(query, **options))).results]  # type: ignore[arg-type]


async def test_seed_scenarios_hold_together(engine: MemoryEngine) -> None:
    assert "I love building web apps with React" in await contents(engine, "frontend development preferences")
    # The project itself has a cosine of 0 to this question (MiniLM): its sibling answers it.
    found = (await engine.search(SearchRequest("what am I building?"))).results
    assert found[0].content in MEMORIES[:2] and found[0].match == "answer"


@pytest.mark.parametrize(
    "question",
    ["what's my passport number?", "what is my cholesterol level?", "who is my insurance provider?"],
)
async def test_questions_about_things_never_stored_are_never_answered(engine: MemoryEngine, question: str) -> None:
    """The nearest memory may be shown, as context ("not stored; this is the nearest"), never as the answer.
    (Not every time: the share answered is measured by eval/owners_eval.py.)"""
    assert all(hit.match == "context" for hit in (await engine.search(SearchRequest(question))).results)


async def test_names_are_found_by_keyword(engine: MemoryEngine) -> None:
    result = await engine.search(SearchRequest("Priya"))
    assert result.results and result.results[0].content == "User's manager is Priya Shah."
    assert result.results[0].matched_by in ("keyword", "both")


async def test_natural_questions_find_their_memory(engine: MemoryEngine) -> None:
    assert (await contents(engine, "what's my dog called?"))[0] == "User's dog is a border collie named Biscuit."
    assert "User is allergic to penicillin." in await contents(engine, "am I allergic to any medication?")
    assert (await contents(engine, "which database did we pick for billing?"))[0].startswith(
        "Decided to use PostgreSQL"
    )


async def test_relevance_is_bounded_ordered_and_adjustable(engine: MemoryEngine) -> None:
    default = (await engine.search(SearchRequest("what do I like to eat and drink?", limit=20))).results
    everything = (
        await engine.search(SearchRequest("what do I like to eat and drink?", limit=20, min_relevance=0))
    ).results
    assert len(everything) >= len(default)
    scores = [hit.relevance_score for hit in everything]
    assert scores == sorted(scores, reverse=True)
    assert all(0 <= s <= 100 for s in scores)
    assert all(hit.relevance_score >= 30 for hit in default)
    strict = (
        await engine.search(SearchRequest("what do I like to eat and drink?", limit=20, min_relevance=90))
    ).results
    assert all(hit.relevance_score >= 90 for hit in strict)
    for bad in (-1, 101, "high", True):
        with pytest.raises(InvalidInputError, match="min_relevance"):
            await engine.search(SearchRequest("coffee", min_relevance=bad))


async def test_identical_content_returns_the_existing_memory(engine: MemoryEngine) -> None:
    again = await engine.store(StoreRequest("  user prefers DARK roast coffee,   black, no sugar. "))
    assert again.status == "duplicate"
    original = await engine.search(SearchRequest("dark roast coffee"))
    assert again.memory_id == original.results[0].memory_id
    assert "no copy" in again.message
    assert (await engine.stats()).total_memories == len(MEMORIES)


async def test_near_duplicates_are_reported_not_refused(engine: MemoryEngine) -> None:
    result = await engine.store(StoreRequest("User prefers dark roast coffee, black, without sugar."))
    assert result.status == "stored"
    assert [n.content for n in result.near_duplicates] == ["User prefers dark roast coffee, black, no sugar."]
    assert result.near_duplicates[0].similarity >= 0.92


async def test_search_never_returns_the_same_content_twice(runtime: Runtime) -> None:
    engine = runtime.engine
    store = await engine._io.opened()  # two copies written below the engine, as old data may hold
    text = "The garage code is on the fridge"
    vectors = await engine._embedder.embed([text])
    for micros in (1_700_000_000_000_000, 1_700_000_000_000_001):
        memory = StoredMemory(f"mem_{micros:016d}0000", text, iso_utc(micros), micros, (), content_hash(text))
        store.call(MemoryStore.add, memory, vectors, [text])
    found = await contents(engine, "where is the garage code?", min_relevance=0)
    assert found.count(text) == 1


async def test_time_filters(runtime: Runtime) -> None:
    engine = runtime.engine
    store = await engine._io.opened()
    now = datetime.now(UTC)
    dated = {
        "Lunch with Marco about the grant proposal": now - timedelta(days=1),
        "Dinner with Marco to celebrate the grant": now - timedelta(days=40),
        "Call with Marco about the grant budget": now - timedelta(minutes=5),
    }
    for text, moment in dated.items():
        micros = int(moment.timestamp() * 1_000_000)
        vectors = await engine._embedder.embed([text])
        store.call(
            MemoryStore.add,
            StoredMemory(f"mem_{micros:016d}0000", text, iso_utc(micros), micros, (), content_hash(text)),
            vectors,
            [text],
        )
    everything = await contents(engine, "Marco grant", limit=10, min_relevance=0)
    assert set(everything) == set(dated)
    assert await contents(engine, "Marco grant", when="yesterday", min_relevance=0) == [
        "Lunch with Marco about the grant proposal"
    ]
    recent = await contents(engine, "Marco grant", after=(now - timedelta(days=7)).date().isoformat(), min_relevance=0)
    assert set(recent) == {"Lunch with Marco about the grant proposal", "Call with Marco about the grant budget"}
    older = await contents(engine, "Marco grant", before="last week", min_relevance=0)
    assert older == ["Dinner with Marco to celebrate the grant"]
    with pytest.raises(InvalidInputError, match="not a date or time phrase"):
        await engine.search(SearchRequest("Marco", when="around teatime"))
    with pytest.raises(InvalidInputError, match="no period"):
        await engine.search(SearchRequest("Marco", after="today", before="yesterday"))


def test_time_phrases() -> None:
    now = datetime(2026, 11, 21, 15, 0, tzinfo=UTC)  # a Saturday
    day = timedelta(days=1)
    assert timeparse.parse("yesterday", now).start == datetime(2026, 11, 20, tzinfo=UTC)
    last_week = timeparse.parse("last week", now)
    assert (last_week.start, last_week.end) == (datetime(2026, 11, 9, tzinfo=UTC), datetime(2026, 11, 16, tzinfo=UTC))
    march = timeparse.parse("in March", now)
    assert (march.start.year, march.start.month, march.end.month) == (2026, 3, 4)
    december = timeparse.parse("December", now)  # the most recent December is last year's
    assert december.start.year == 2025
    assert timeparse.parse("3 days ago", now).start == datetime(2026, 11, 18, tzinfo=UTC)
    assert timeparse.parse("past 2 weeks", now).start == now - 14 * day
    assert timeparse.parse("last Friday", now).start == datetime(2026, 11, 20, tzinfo=UTC)
    assert timeparse.parse("2026-03-05", now).end == datetime(2026, 3, 6, tzinfo=UTC)
    assert timeparse.parse("2025", now).start == datetime(2025, 1, 1, tzinfo=UTC)
    with pytest.raises(timeparse.TimePhraseError):
        timeparse.parse("the day after the party", now)


def test_ties_go_to_the_newer_memory() -> None:
    dense = [Match("mem_00000000000000010000", 0.5), Match("mem_00000000000000020000", 0.5)]
    ranked = fuse(dense, [])
    assert [c.memory_id for c in ranked] == ["mem_00000000000000020000", "mem_00000000000000010000"]


def test_scores_stay_within_0_and_100_whatever_the_evidence() -> None:
    from symbiote.retrieval.cohort import Closeness
    from symbiote.retrieval.ranking import Candidate, QueryEvidence, judge

    best = Candidate("mem_b", 1.0000001, 1.0, 1.0, 1.6500001, "both")
    other = Candidate("mem_a", -0.3, 0.0, 0.0, 0.0, "semantic")
    evidence = QueryEvidence(closeness=Closeness(0.0, 0.02), activation=1.0000002)
    texts = ["what is my cat called? Miso", "nothing at all"]
    judged = judge("what is my cat called?", [best, other], evidence, texts, total=2)
    assert [j.candidate.memory_id for j in judged] == ["mem_b", "mem_a"]
    assert 0.0 <= judged[1].score < judged[0].score <= 100.0 and judged[0].match == "answer"


def test_fusion_rewards_agreement_and_says_why() -> None:
    dense = [Match("mem_a", 0.55), Match("mem_b", 0.50), Match("mem_c", 0.20)]
    keyword = [KeywordMatch("mem_b", 8.0), KeywordMatch("mem_d", 4.0)]
    ranked = {c.memory_id: c for c in fuse(dense, keyword)}
    assert ranked["mem_b"].fused > ranked["mem_a"].fused  # both retrievers agree
    assert ranked["mem_b"].matched_by == "both" and ranked["mem_a"].matched_by == "semantic"
    assert ranked["mem_d"].matched_by == "keyword" and ranked["mem_d"].cosine == 0.20


async def test_delete_removes_from_both_indexes(engine: MemoryEngine) -> None:
    target = (await engine.search(SearchRequest("Priya"))).results[0]
    await engine.delete(target.memory_id)
    assert await contents(engine, "Priya", min_relevance=0) == [] or all(
        c != target.content for c in await contents(engine, "Priya", min_relevance=0)
    )
    store = await engine._io.opened()
    assert all(m.memory_id != target.memory_id for m in store.call(MemoryStore.keyword, "Priya Shah", 10))


async def test_keyword_index_is_rebuilt_from_chroma_when_missing(settings: Settings) -> None:
    first = make_runtime(settings)
    await first.engine.store(StoreRequest("User's manager is Priya Shah."))
    await first.engine.store(StoreRequest("User drives a 2019 Toyota Corolla hybrid."))
    first.close()
    (settings.chromadb_path / SIDE_DATABASE_FILE).unlink()
    for suffix in ("-wal", "-shm"):
        Path(str(settings.chromadb_path / SIDE_DATABASE_FILE) + suffix).unlink(missing_ok=True)
    second = make_runtime(settings)
    try:
        store = await second.engine._io.opened()
        assert [m.memory_id for m in store.call(MemoryStore.keyword, "Corolla", 5)]
        assert (await second.engine.search(SearchRequest("Priya"))).results[
            0
        ].content == "User's manager is Priya Shah."
    finally:
        second.close()


async def test_a_failed_chroma_write_leaves_no_keyword_entry(runtime: Runtime) -> None:
    engine = runtime.engine
    await engine.store(StoreRequest("A healthy memory fixes the collection's dimension at 384"))
    store = await engine._io.opened()
    text = "This write will fail in Chroma"
    micros = 1_750_000_000_000_000
    broken = np.zeros((1, 3), dtype=np.float32)  # wrong dimension: Chroma refuses it
    with pytest.raises(Exception, match="(?i)dimension"):
        store.call(
            MemoryStore.add,
            StoredMemory(f"mem_{micros:016d}0000", text, iso_utc(micros), micros, (), content_hash(text)),
            broken,
            [text],
        )
    assert store.call(MemoryStore.keyword, "write will fail", 5) == []
    assert store.call(MemoryStore.count) == 1


async def test_long_memory_found_by_its_last_paragraph_among_others(engine: MemoryEngine) -> None:
    body = "\n\n".join(
        f"Section {i}: quarterly planning notes about hiring, budget and office moves." for i in range(40)
    )
    ending = "Last paragraph: the spare house key is hidden under the blue flowerpot."
    stored = await engine.store(StoreRequest(f"{body}\n\n{ending}"))
    await engine.passages_indexed()  # a long memory's paragraphs are indexed right after the store
    found = await engine.search(SearchRequest("where is the spare key hidden?"))
    assert found.results and found.results[0].memory_id == stored.memory_id


async def test_results_explain_why_they_matched(engine: MemoryEngine) -> None:
    for hit in (await engine.search(SearchRequest("React", min_relevance=0, limit=10))).results:
        assert hit.matched_by in ("semantic", "keyword", "both", "topic")


def test_the_scored_candidates_include_the_nearest_by_meaning() -> None:
    """Keywords may push a memory down the fused order; scoring still sees what plain cosine would show."""
    from symbiote.retrieval.ranking import likely

    dense = [Match(f"mem_{i:020d}", 0.9 - i / 100) for i in range(6)]
    keyword = [KeywordMatch(f"mem_{100 + i:020d}", 10.0) for i in range(4)]
    ranked = fuse(dense, keyword)
    chosen = likely(ranked, prefetch=2)
    assert {"mem_00000000000000000000", "mem_00000000000000000001"} <= set(chosen)
    assert ranked[0].memory_id in chosen
