"""A new owner's six facts after 400 conversation turns, as the relevance issue tried it: the score is a
chance, an `answer` is earned, a turn about someone else never passes for the owner's fact, and what
the cut-off hides is offered apart, clearly marked."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from symbiote.config import Settings
from symbiote.memory import MemoryEngine, SearchRequest
from tests.conftest import make_runtime

FACTS = [
    "The user drinks green tea with honey, never coffee.",
    "User's partner Sam is a nurse who works night shifts.",
    "Runs a small pottery studio called Clayhouse in Leeds.",
    "Prefers Python for data work; uses Polars instead of pandas.",
    "Has a mild peanut allergy.",
    "Plays five-a-side football on Thursday evenings.",
]
QUESTIONS = [
    ("what do I drink in the morning?", FACTS[0]),
    ("what does my partner do?", FACTS[1]),
    ("what's the name of my studio?", FACTS[2]),
    ("what do I use instead of pandas?", FACTS[3]),
    ("am I allergic to anything?", FACTS[4]),
    ("what sport do I play?", FACTS[5]),
]
NEVER_STORED = ["what's my blood type?", "what car do I drive?", "where did I go to university?"]
# A turn that shares one word with a question ("library", "type") is someone else's: never the answer.
SHARED_WORD = ["which dataframe library do I like?", "what type of tea do I drink?", "what sport do I play?"]
CHATTER = Path(__file__).resolve().parents[2] / "eval" / "chatter.json"


pytestmark = pytest.mark.slow  # a store of a whole conversation, embedded for the module


@pytest.fixture(scope="module")
async def engine(tmp_path_factory: pytest.TempPathFactory, model_dir: Path) -> AsyncIterator[MemoryEngine]:
    settings = Settings(
        chromadb_path=tmp_path_factory.mktemp("honest") / "data", model_dir=model_dir, store_process=False
    )
    runtime = make_runtime(settings)
    speakers = ("Melanie", "Caroline")
    turns = json.loads(CHATTER.read_text())["turns"][:400]
    lines = [f"{i // 20 + 1} May 2023 {speakers[i % 2]}: {text}" for i, text in enumerate(turns)]
    for start in range(0, len(lines), 100):
        await runtime.engine.store_many(lines[start : start + 100])
    await runtime.engine.store_many(FACTS)
    await runtime.engine.passages_indexed()
    yield runtime.engine
    runtime.close()


@pytest.mark.parametrize(("question", "fact"), QUESTIONS)
async def test_each_fact_comes_first_and_no_turn_about_someone_else_is_an_answer(
    engine: MemoryEngine, question: str, fact: str
) -> None:
    found = await engine.search(SearchRequest(question))
    offered = [hit.content for hit in found.results + found.below_cutoff]
    assert offered and offered[0] == fact, (question, offered[:3])
    answers = [hit.content for hit in found.results if hit.match == "answer"]
    assert all(text in FACTS for text in answers), (question, answers)


@pytest.mark.parametrize("question", SHARED_WORD)
async def test_a_turn_sharing_one_word_is_never_an_answer(engine: MemoryEngine, question: str) -> None:
    found = await engine.search(SearchRequest(question))
    turns = [hit for hit in found.results + found.below_cutoff if hit.content not in FACTS]
    assert all(hit.match == "context" for hit in turns), question
    facts = [hit.relevance_score for hit in found.results if hit.content in FACTS]
    assert all(hit.relevance_score < max(facts, default=100) for hit in turns), question


@pytest.mark.parametrize("question", NEVER_STORED)
async def test_a_never_stored_question_gets_no_answer(engine: MemoryEngine, question: str) -> None:
    found = await engine.search(SearchRequest(question))
    assert all(hit.match == "context" for hit in found.results + found.below_cutoff), question


async def test_what_the_cut_off_hides_is_offered_apart_and_scored_under_it(engine: MemoryEngine) -> None:
    found = await engine.search(SearchRequest("what do I do on Thursday evenings?", limit=5))
    assert all(hit.relevance_score >= 30 for hit in found.results)
    assert all(hit.relevance_score < 30 and hit.match == "context" for hit in found.below_cutoff)
    assert len(found.results) + len(found.below_cutoff) <= 5
    if found.below_cutoff:
        assert "below_cutoff" in found.message
    strict = await engine.search(SearchRequest("what do I do on Thursday evenings?", limit=5, min_relevance=0))
    assert strict.below_cutoff == []  # nothing is under a cut-off of 0


@pytest.mark.parametrize("request_text", ["user dietary restrictions", "help me plan the weekend", "sports"])
async def test_what_the_cut_off_hides_from_a_request_comes_nearest_in_meaning_first(
    engine: MemoryEngine, request_text: str
) -> None:
    """A request's score weighs what is on its subject, which under the cut-off vouches for little: the rest
    come by plain similarity, so what is in view holds the owner's memory at least as often as cosine's first."""
    found = await engine.search(SearchRequest(request_text, limit=5, min_relevance=95))
    candidates, _evidence = await engine.rank(request_text)
    cosine = {c.memory_id: c.cosine for c in candidates}
    below = [cosine[hit.memory_id] for hit in found.below_cutoff]
    assert len(found.results) + len(below) == 5 and below == sorted(below, reverse=True)
    assert "nearest in meaning first" in found.message


async def test_what_the_cut_off_hides_from_a_question_comes_best_first(engine: MemoryEngine) -> None:
    found = await engine.search(SearchRequest("what sport do I play?", limit=5, min_relevance=95))
    scores = [hit.relevance_score for hit in found.below_cutoff]
    assert len(found.results) + len(scores) == 5 and scores == sorted(scores, reverse=True)
    assert "best first" in found.message
