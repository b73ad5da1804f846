"""What people actually type: the seed's four scenarios on a new store and on a full one.

Real model, real Chroma, real keyword index. A query a person types (a request, a vague
question, a bare phrase) must find the memory it needs whether that memory is alone in the
store or one of many, and each result says whether it answers or is context. Figures per kind
of query are in eval/personal_set.py.
"""

from __future__ import annotations

import pytest

from symbiote.memory import MemoryEngine, SearchRequest, SearchResults, StoreRequest
from symbiote.retrieval.intent import intent_of
from symbiote.retrieval.subjects import subjects_of
from tests.retrieval.test_search import MEMORIES as OTHERS

REACT_LOVE = "I love building web apps with React"
REACT_PROJECT = "I'm working on a React app with TypeScript and authentication"
TYPESCRIPT = "I prefer TypeScript over JavaScript"
LOGIN_FORM = "The login form has email and password fields and a 'forgot password' link"

SEEDS = [
    ("frontend development preferences", REACT_LOVE),
    ("what am I building?", REACT_PROJECT),
    ("Help me write a script", TYPESCRIPT),
    ("login screen", LOGIN_FORM),
]


NEW_OWNER = [
    "User's sister Inês lives in Porto and teaches chemistry.",
    "Shoots street photography on a Fujifilm X-T5.",
    "I'm lactose intolerant.",
    "Works remotely for a Dutch fintech, mostly in Go.",
    "Prefers short answers with code first, explanation after.",
    "Planning to run the Lisbon half marathon in March.",
]
PLAIN_QUESTIONS = [
    ("do I have any siblings?", NEW_OWNER[0]),
    ("what camera do I use?", NEW_OWNER[1]),
    ("what language do I code in at work?", NEW_OWNER[3]),
    ("what races am I doing?", NEW_OWNER[5]),
]


@pytest.mark.parametrize(("query", "memory"), SEEDS)
async def test_a_seed_finds_its_memory_alone_in_a_new_store(engine: MemoryEngine, query: str, memory: str) -> None:
    await engine.store(StoreRequest(memory))
    found = (await engine.search(SearchRequest(query))).results
    assert [hit.content for hit in found] == [memory]
    assert found[0].relevance_score >= 30


@pytest.mark.parametrize(("query", "memory"), SEEDS)
async def test_a_seed_finds_its_memory_among_many(engine: MemoryEngine, query: str, memory: str) -> None:
    """Shown, or offered under the cut-off; "what am I building?" may be answered by either React memory
    (the project's own cosine to it is 0: only its topic links them)."""
    for text in dict.fromkeys([*OTHERS, REACT_LOVE, REACT_PROJECT, TYPESCRIPT, LOGIN_FORM]):
        await engine.store(StoreRequest(text))
    found = await engine.search(SearchRequest(query))
    offered = [hit.content for hit in found.results + found.below_cutoff]
    wanted = {memory, REACT_LOVE} if memory == REACT_PROJECT else {memory}
    assert wanted & set(offered)


async def test_each_result_says_whether_it_answers_or_is_context(engine: MemoryEngine) -> None:
    for text in (REACT_PROJECT, TYPESCRIPT, NEW_OWNER[1]):
        await engine.store(StoreRequest(text))
    request = (await engine.search(SearchRequest("Help me write a script"))).results
    assert request[0].content == TYPESCRIPT and all(hit.match == "context" for hit in request)
    question = (await engine.search(SearchRequest("what camera do I use?"))).results
    assert question[0].content == NEW_OWNER[1] and question[0].relevance_score >= 30
    assert all(hit.match == "context" for hit in question[1:])
    vague = await engine.search(SearchRequest("what am I building?"))
    assert REACT_PROJECT in [hit.content for hit in vague.results + vague.below_cutoff]


async def test_what_was_never_stored_finds_nothing_or_only_context(engine: MemoryEngine) -> None:
    for text in OTHERS:
        await engine.store(StoreRequest(text))
    for question in ("explain how tides work", "what's my passport number?", "who is my insurance provider?"):
        assert all(hit.match == "context" for hit in (await engine.search(SearchRequest(question))).results), question


@pytest.mark.slow
async def test_a_new_owners_plain_questions_find_their_facts_in_a_small_store_and_a_large_one(
    engine: MemoryEngine,
) -> None:
    """The same fact is shown, or offered under the cut-off, among 6 memories and among 400 more (its score
    may change: it is the chance of being relevant among the memories there are)."""
    for text in NEW_OWNER:
        await engine.store(StoreRequest(text))

    def offered(found: SearchResults) -> list[str]:
        return [hit.content for hit in found.results + found.below_cutoff]

    for question, fact in PLAIN_QUESTIONS:
        assert fact in offered(await engine.search(SearchRequest(question))), question
    others = [f"{text} (note {i})" for i in range(12) for text in OTHERS][:400]
    for start in range(0, len(others), 100):
        await engine.store_many(others[start : start + 100])
    for question, fact in PLAIN_QUESTIONS:  # still among the first five of 400 more, however likely
        assert fact in offered(await engine.search(SearchRequest(question, min_relevance=0))), question


def test_questions_and_requests_are_told_apart() -> None:
    questions = [
        "what's my dog called?",
        "When did Melanie paint a sunrise?",
        "do I have a cat",
        "how do I take my coffee?",
    ]
    requests = [
        "Help me write a script",
        "what should I cook tonight?",
        "can you fix this test",
        "login screen",
        "any ideas for the weekend?",
        "can't sleep again",
        "how do I unclog a drain",
    ]
    assert [intent_of(q) for q in questions] == ["question"] * len(questions)
    assert [intent_of(r) for r in requests] == ["request"] * len(requests)


def test_a_request_names_its_subject_by_its_words() -> None:
    script = subjects_of("Help me write a script")
    assert script is not None and "code" in script.names and "typescript" in script.words
    assert subjects_of("what's my salary?").particular and not subjects_of("where am I with money").particular
    assert subjects_of("tell me a joke") is None
