"""What is true now first: in what the assistant reads, a later note on the same thing is read first.

Real model, real Chroma, the engine's defaults. Memories are stored in order, as told; the older
of two about one thing must not be shown above the newer, and is marked as an earlier note
(`newer_note`) when no link names its replacement; no score is changed. Look-alikes that replace
nothing (a sibling's fact, another project on the same stack, a past trip beside a plan, weekly
notes to one template) and a conversation's turns keep their place and no mark. Figures on 56
owners: eval/update_lives_eval.py.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import numpy as np
import pytest

from symbiote.config import Settings
from symbiote.memory import MemoryEngine, SearchHit, SearchRequest, StoreRequest
from symbiote.retrieval import succession
from tests.conftest import make_runtime

JOURNAL = (
    "Journal. Long day again. The weather finally turned and we had lunch outside. I keep meaning to call "
    "Grandad and keep forgetting. Work was mostly meetings, which drains me more than it should. The physio "
    "rang: from now on it's Thursdays at 8am. We watched half a documentary about octopuses before falling "
    "asleep on the sofa. The neighbours are renovating and the drilling starts at eight sharp. I finished the "
    "book I was reading and did not love the ending. Made a big pot of lentil soup that should last until Thursday."
)

UPDATES = [  # (memories in the order told, the question; the last memory is the newer, the first the older)
    (
        ["My dentist is Anna Weber.", "Prefers short answers with bullet points.", "New dentist: Marco Rossi"],
        "Who is my dentist?",
    ),
    (["Physio appointments are on Tuesdays at 5pm.", JOURNAL], "When is my physio?"),
]

WEEKS = [
    f"Week {week} review. Done: most of {done}. Blocked: {blocked}. Next: wrap up {done} and check in with the "
    "team. Mood: okay. Energy: medium."
    for week, (done, blocked) in enumerate(
        [("the data migration", "legal sign-off"), ("the office move", "a missing API key"), ("the audit", "budget")],
        start=12,
    )
]
LOOK_ALIKES = [  # (memories in the order told, the question the first one answers)
    (["My sister lives in Hamburg and works as a nurse.", "My brother lives in Munich and works as a chef."],
     "Where does my sister live?"),
    (["Project Atlas runs on Django and Postgres, deployed to Heroku.",
      "Project Sable is also Django and Postgres; it's deployed to Fly.io."], "Where is Atlas deployed?"),
    (["In summer 2019 we spent two weeks in Portugal and loved it.", "Planning a summer trip to Japan next year."],
     "Where did we go on holiday in 2019?"),
    ([WEEKS[1], WEEKS[0], WEEKS[2]], "Which week was I blocked on a missing API key?"),
]  # fmt: skip


OTHERS = [  # an owner's other memories, stored first: a pair stands out from the rest read beside it
    "Allergic to penicillin.",
    "Works as a structural engineer in Leeds.",
    "Plays five-a-side football on Wednesday evenings.",
    "Saving for a deposit on a flat.",
    "The car is due its MOT in October.",
]


async def _read(engine: MemoryEngine, texts: list[str], query: str) -> tuple[list[str], list[SearchHit]]:
    """Store the owner's other memories, then `texts` in order, then ask: their ids, and what the
    assistant reads (results, then below_cutoff)."""
    for text in OTHERS:
        await engine.store(StoreRequest(text))
    ids = [(await engine.store(StoreRequest(text))).memory_id for text in texts]
    await engine.passages_indexed()
    found = await engine.search(SearchRequest(query))
    return ids, found.results + found.below_cutoff


@pytest.mark.parametrize(("texts", "query"), UPDATES)
async def test_the_later_note_is_read_first_and_the_older_marked(
    engine: MemoryEngine, texts: list[str], query: str
) -> None:
    """No link was made when they were stored (the server was not sure); the search marks the older with the
    newer and shows the newer above it: the results stay above the cut-off and below_cutoff under
    it. A changed fact in the middle of a long journal entry counts like a short note."""
    ids, _read_first = await _read(engine, texts, query)
    older, newer = ids[0], ids[-1]
    assert (await engine.get(older)).superseded_by is None
    found = await engine.search(SearchRequest(query))
    hits = {hit.memory_id: hit for hit in found.results + found.below_cutoff}
    assert hits[older].newer_note == newer and hits[newer].newer_note is None
    for part in (found.results, found.below_cutoff):
        order = [hit.memory_id for hit in part]
        assert older not in order or newer not in order or order.index(newer) < order.index(older)
    assert all(hit.relevance_score >= 30 for hit in found.results)
    assert all(hit.relevance_score < 30 for hit in found.below_cutoff)


async def test_the_later_note_moves_above_the_older_with_its_own_score(engine: MemoryEngine) -> None:
    """Both above the cut-off: the newer is shown first though the older, which says the question's
    words, scores higher; neither score is changed."""
    texts = ["My dentist is Anna Weber.", "Prefers short answers with bullet points.", "New dentist: Marco Rossi"]
    ids, _read_first = await _read(engine, texts, "Who is my dentist?")
    found = await engine.search(SearchRequest("Who is my dentist?"))
    order = [hit.memory_id for hit in found.results]
    assert order.index(ids[2]) < order.index(ids[0])
    scores = {hit.memory_id: hit.relevance_score for hit in found.results}
    assert scores[ids[0]] > scores[ids[2]]


async def test_a_search_makes_one_trip_to_the_store_process(settings: Settings) -> None:
    """The later note is found from the vectors the ranking's own trip brings back (the store process
    holds them): no second call for them, right after the stores (the sentences still held there, not
    yet written to Chroma) as once everything is written."""
    runtime = make_runtime(replace(settings, store_process=True))
    host, engine = runtime.store_process, runtime.engine
    assert host is not None
    try:
        texts, query = UPDATES[0]
        for text in OTHERS:
            await engine.store(StoreRequest(text))
        ids = [(await engine.store(StoreRequest(text))).memory_id for text in texts]
        for _ in range(2):
            before = host.calls.copy()
            found = await engine.search(SearchRequest(query))
            assert host.calls - before == Counter({"search": 1})
            marked = {hit.memory_id: hit.newer_note for hit in found.results + found.below_cutoff}
            assert marked[ids[0]] == ids[-1]
            await engine.passages_indexed()
    finally:
        runtime.close()


async def test_a_later_note_the_server_is_sure_of_joins_the_results_above_the_older(engine: MemoryEngine) -> None:
    """The new number says less of "my mobile number" than the old sentence that says those words: on
    its own it scores under the cut-off. The pair stands out as a change in words alone must, so the
    newer joins the results right above the older, with the older's score, as a linked replacement does."""
    query = "my mobile number"
    ids, _read_first = await _read(
        engine, ["My mobile number is 07700 900123.", "New phone number: 07911 123456"], query
    )
    older, newer = ids
    assert (await engine.get(older)).superseded_by is None
    own = {
        hit.memory_id: hit.relevance_score
        for hit in (await engine.search(SearchRequest(query, min_relevance=0))).results
    }
    assert own[newer] < 30 <= own[older]
    found = await engine.search(SearchRequest(query))
    order = [hit.memory_id for hit in found.results]
    assert order.index(newer) == order.index(older) - 1
    shown = {hit.memory_id: hit for hit in found.results}
    assert shown[newer].relevance_score == shown[older].relevance_score == own[older]
    assert shown[older].newer_note == newer
    assert all(hit.memory_id not in ids for hit in found.below_cutoff)
    assert found.message.startswith(f"{len(found.results)} memories scored 30 or more.")


def test_a_long_note_read_by_its_sentence_is_sure_on_its_lead_alone() -> None:
    """A sentence says its fact among the entry's words: at a cosine of 0.50 to the short note it
    changes, a pair standing out by 0.30 is sure when the later is a long note read by that sentence,
    and not when both are short (two short notes that close may be two facts on one subject). The
    vectors are given, so that the closeness is exactly what the rule is asked about."""
    sentence = "The good news: my pay review came through and my salary goes up to £48,000 from next month."
    journal = f"Journal. Long day again. {sentence} Made a big pot of lentil soup that should last until Thursday."
    axes = np.eye(5)
    older = axes[0]
    newer = 0.5 * axes[0] + np.sqrt(0.75) * axes[1]
    rest = [0.2 * axes[0] + np.sqrt(0.96) * axes[2], 0.2 * axes[0] + np.sqrt(0.96) * axes[3]]
    asked = (older + newer) / np.linalg.norm(older + newer)

    def notes(long: bool) -> list[succession.Note]:
        later = (
            succession.Note("new", journal, 3, np.vstack([axes[4], newer]), (sentence,))
            if long
            else succession.Note("new", sentence, 3, newer[None, :])
        )
        return [
            succession.Note("old", "Salary is £41,000 a year.", 1, older[None, :]),
            succession.Note("a", "Allergic to penicillin.", 0, rest[0][None, :]),
            succession.Note("b", "Plays five-a-side football on Wednesday evenings.", 2, rest[1][None, :]),
            later,
        ]

    assert succession.later_notes("What is my salary?", asked, notes(long=True)) == {"old": ("new", True)}
    assert succession.later_notes("What is my salary?", asked, notes(long=False)) == {"old": ("new", False)}


@pytest.mark.parametrize(("texts", "query"), LOOK_ALIKES)
async def test_a_look_alike_keeps_its_place_and_no_mark(engine: MemoryEngine, texts: list[str], query: str) -> None:
    """A sibling's fact, another project on one stack, next summer's plan beside a past trip, the next
    week's review: later and close, but no new value of what the question asks."""
    ids, read = await _read(engine, texts, query)
    assert read[0].memory_id == ids[0]
    assert all(hit.newer_note is None and hit.superseded_by is None for hit in read)


TURNS = [  # one speaker's turns on one subject, each dated: a conversation, no update of each other
    "8 May 2023 Caroline: I went to a support group for trans people yesterday and it was so powerful.",
    "9 June 2023 Caroline: Hey Melanie! I talked at my school about my transgender journey last week.",
    "20 July 2023 Caroline: Thanks, Melanie! I just joined a new activist group for trans rights last Tuesday.",
    "17 August 2023 Caroline: Hey Mel! Recently I had a rough time on a hike with some religious conservatives.",
]


async def test_a_conversations_turns_keep_their_order_and_no_mark(engine: MemoryEngine) -> None:
    """Turns of one speaker are about as close to each other as to the next: none stands out as the
    later value of another, and the results keep their order by score."""
    _ids, read = await _read(engine, TURNS, "When did Caroline go to the support group?")
    assert all(hit.newer_note is None for hit in read)
    found = await engine.search(SearchRequest("When did Caroline go to the support group?"))
    scores = [hit.relevance_score for hit in found.results]
    assert scores == sorted(scores, reverse=True)


async def test_notes_to_one_template_are_not_linked_at_store(engine: MemoryEngine) -> None:
    """Weekly reviews share the template's words and change several: none replaces another."""
    ids = [(await engine.store(StoreRequest(text))).memory_id for text in WEEKS]
    assert [(await engine.get(mid)).superseded_by for mid in ids] == [None, None, None]
