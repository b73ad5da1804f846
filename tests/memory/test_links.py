"""Links between memories about the same thing, on the real engine (real model, real Chroma):
made at store time, kept across a reopen, never between look-alikes about different subjects,
cleaned up when a memory goes, and applied by search."""

from __future__ import annotations

import pytest

from symbiote.config import Settings
from symbiote.errors import InvalidInputError
from symbiote.memory.engine import MemoryEngine
from symbiote.memory.requests import SearchRequest, StoreRequest
from tests.conftest import make_runtime

LOOK_ALIKES = [
    ("My sister lives in Hamburg.", "My brother lives in Munich."),
    ("Leo has football training on Saturday mornings.", "Ana has ballet on Saturday mornings."),
    ("Mum's birthday is on 3 May.", "Dad's birthday is on 12 August."),
    ("My cat is called Miso.", "My parents' dog is called Pepper."),
    ("Work laptop is a ThinkPad X1 Carbon.", "Personal laptop is a 2019 MacBook Air."),
    ("Budget for our wedding is $30,000.", "Budget for the bathroom renovation is $18,000."),
    ("User is a nurse.", "User's sister is a nurse."),  # the owner's fact and a relative's
    ("The user takes metformin for type 2 diabetes.", "User's father takes metformin for type 2 diabetes."),
]
OTHER_HOLDERS = LOOK_ALIKES[-2:]


async def test_look_alikes_about_different_subjects_are_never_linked(engine: MemoryEngine) -> None:
    for first, second in LOOK_ALIKES:
        await engine.store(StoreRequest(first))
        result = await engine.store(StoreRequest(second))
        assert result.linked is None, (first, second)
        if (first, second) in OTHER_HOLDERS:  # not even offered: whose each is is plain
            assert not result.may_replace, (first, second)
    assert await engine.links.count() == (0, 0)


async def test_links_survive_a_reopen_and_a_chain_keeps_the_newest_first(settings: Settings) -> None:
    engine = make_runtime(settings).engine
    try:
        one = (await engine.store(StoreRequest("Daily standup is at 9:30."))).memory_id
        two = await engine.store(StoreRequest("Standup moved to 10:00 so the Lisbon folks can join."))
        assert (two.linked, two.linked_to, two.link_kind) == ("supersedes", one, "update")
    finally:
        engine.close()
    engine = make_runtime(settings).engine  # a new engine on the same directory
    try:
        assert (await engine.get(one)).superseded_by == two.memory_id
        three = await engine.store(StoreRequest("Standup is at 10:30 now, after the planning meeting."))
        assert three.linked_to == two.memory_id  # the newest of the chain, not the first
        order = [
            r.memory_id for r in (await engine.search(SearchRequest("what time is standup?", min_relevance=0))).results
        ]
        shown = [mid for mid in order if mid in (one, two.memory_id, three.memory_id)]
        assert shown == [three.memory_id, two.memory_id, one]
    finally:
        engine.close()


async def test_search_brings_the_newer_memory_to_a_question_only_the_older_answers(engine: MemoryEngine) -> None:
    old = (await engine.store(StoreRequest("Drives a 2015 VW Golf to work."))).memory_id
    new = (await engine.store(StoreRequest("Sold the Golf in May; now cycles to work on a Brompton."))).memory_id
    results = (await engine.search(SearchRequest("what year is my VW Golf?"))).results
    ids = [r.memory_id for r in results]
    assert ids.index(new) < ids.index(old)
    # Under the cut-off too: never the older value above the newer.
    below = (await engine.search(SearchRequest("what year is my VW Golf?", min_relevance=100))).below_cutoff
    ids = [r.memory_id for r in below]
    assert ids.index(new) < ids.index(old)
    assert results[ids.index(new)].relevance_score >= results[ids.index(old)].relevance_score


async def test_deleting_a_linked_memory_leaves_no_link_pointing_at_nothing(engine: MemoryEngine) -> None:
    old = (await engine.store(StoreRequest("Salary is £48,000 a year."))).memory_id
    new = (await engine.store(StoreRequest("Salary went up to £53,000 a year after the promotion."))).memory_id
    assert (await engine.get(old)).superseded_by == new
    await engine.delete(new)
    assert (await engine.get(old)).superseded_by is None
    assert await engine.links.count() == (0, 0)
    with pytest.raises(InvalidInputError):
        await engine.links.undo(old)
    # Restored from the trash (the undo of a forget), the newer memory has its link back, both ways.
    report = await engine.trash.restore([new])
    assert report.restored == [new]
    back = await engine.get(new)
    assert (back.supersedes, back.superseded_by, back.link_kind) == (old, None, "update")
    assert (await engine.get(old)).superseded_by == new
    [link] = await engine.links.links()
    assert (link.replaced.memory_id, link.first and link.first.memory_id) == (old, new)


async def test_the_owner_keeps_undoes_or_merges(engine: MemoryEngine) -> None:
    old = (await engine.store(StoreRequest("Uses VS Code for all my projects."))).memory_id
    new = (await engine.store(StoreRequest("Switched from VS Code to Neovim last month and not going back."))).memory_id
    [link] = await engine.links.links()
    assert (link.replaced.memory_id, link.first and link.first.memory_id, link.kind, link.kept) == (
        old,
        new,
        "update",
        False,
    )
    await engine.links.keep(old)
    assert await engine.links.count() == (1, 0)
    await engine.links.undo(old)
    assert (await engine.get(old)).superseded_by is None and (await engine.get(new)).supersedes is None
    assert await engine.links.count() == (0, 0)
    newer = (await engine.store(StoreRequest("Switched from Neovim to Helix; VS Code is long gone."))).memory_id
    assert (await engine.get(new)).superseded_by == newer
    await engine.links.merge(new)
    assert [m.memory_id for m in (await engine.list_memories(limit=10)).memories] == [newer, old]
    assert (await engine.get(newer)).supersedes is None
