"""Offers and confirmed links on the real engine (real model, real Chroma): a store offers what the
server's rule is not sure of, `replaces` and `link` confirm it (validated), each link says who made
it, and a batch links and offers as single stores do."""

from __future__ import annotations

import pytest

from symbiote.errors import InvalidInputError, MemoryNotFoundError
from symbiote.memory.engine import MemoryEngine
from symbiote.memory.links import ASSISTANT, OWNER
from symbiote.memory.requests import SearchRequest, StoreRequest

MISSING = "mem_17000000000000000000"


async def test_a_new_value_sharing_no_word_is_offered_not_linked(engine: MemoryEngine) -> None:
    old = (await engine.store(StoreRequest("Salary is £48,000."))).memory_id
    await engine.store(StoreRequest("Does yoga on Wednesday evenings."))
    new = await engine.store(StoreRequest("Pay rise to £53,000 after becoming a partner in the practice."))
    assert new.linked is None  # no word shared with the old value: the server's rule is not sure
    assert [m.memory_id for m in new.may_replace] == [old]
    assert "link_memories" in new.message and old in new.message
    unrelated = await engine.store(StoreRequest("My cat is called Miso."))
    assert unrelated.may_replace == [] and "may_replace" not in unrelated.message


async def test_replaces_links_at_store_time_by_the_assistant(engine: MemoryEngine) -> None:
    old = (await engine.store(StoreRequest("I live in Koramangala, near the lake."))).memory_id
    before = await engine.stats()
    result = await engine.store(StoreRequest("We moved to Whitefield last month.", replaces=[old]))
    assert result.replaced == [old] and (result.linked, result.linked_to) == ("supersedes", old)
    assert old not in [m.memory_id for m in result.may_replace]  # linked: not offered too
    assert (await engine.get(old)).superseded_by == result.memory_id
    [link] = await engine.links.links()
    assert link.by == ASSISTANT and link.replaced.memory_id == old
    order = [r.memory_id for r in (await engine.search(SearchRequest("where do I live?", min_relevance=0))).results]
    assert order.index(result.memory_id) < order.index(old)
    assert (await engine.stats()).total_memories == before.total_memories + 1


async def test_a_bad_id_in_replaces_is_named_and_nothing_is_stored(engine: MemoryEngine) -> None:
    await engine.store(StoreRequest("Drives a 2015 VW Golf to work."))
    with pytest.raises(InvalidInputError, match=MISSING):
        await engine.store(StoreRequest("Cycles to work on a Brompton now.", replaces=[MISSING]))
    with pytest.raises(InvalidInputError, match="not a memory id"):
        await engine.store(StoreRequest("Cycles to work on a Brompton now.", replaces=["golf"]))
    assert (await engine.stats()).total_memories == 1


async def test_link_is_validated_and_undone(engine: MemoryEngine) -> None:
    one = (await engine.store(StoreRequest("Team lead is Priya Nair."))).memory_id
    two = (await engine.store(StoreRequest("I play the cello in a community orchestra."))).memory_id
    three = (await engine.store(StoreRequest("Plays chess at the club on Sunday afternoons."))).memory_id
    with pytest.raises(InvalidInputError, match="itself"):
        await engine.links.link(one, one, "update", ASSISTANT)
    with pytest.raises(MemoryNotFoundError, match=MISSING):
        await engine.links.link(MISSING, one, "update", ASSISTANT)
    with pytest.raises(MemoryNotFoundError, match=MISSING):
        await engine.links.link(one, MISSING, "update", ASSISTANT)
    with pytest.raises(InvalidInputError, match="kind"):
        await engine.links.link(three, one, "newer", ASSISTANT)
    done = await engine.links.link(three, one, "update", ASSISTANT)
    assert done.linked and done.by == ASSISTANT
    assert (await engine.links.link(three, one, "update", ASSISTANT)).message.startswith("Already linked")
    with pytest.raises(InvalidInputError, match="cycle"):
        await engine.links.link(one, three, "update", ASSISTANT)  # one already replaced by three
    chained = await engine.links.link(two, three, "duplicate", OWNER)  # two replaces three replaces one
    assert chained.by == OWNER
    with pytest.raises(InvalidInputError, match="cycle"):
        await engine.links.link(one, two, "update", ASSISTANT)  # through three
    with pytest.raises(InvalidInputError, match="no such link"):
        await engine.links.unlink(one, three)
    undone = await engine.links.unlink(three, one)
    assert not undone.linked
    assert (await engine.get(one)).superseded_by is None and (await engine.get(three)).supersedes is None
    assert {link.by for link in await engine.links.links()} == {OWNER}


async def test_relinking_an_older_memory_moves_it(engine: MemoryEngine) -> None:
    old = (await engine.store(StoreRequest("Our dentist is Smile Dental on Park Road."))).memory_id
    wrong = (await engine.store(StoreRequest("I floss every evening."))).memory_id
    right = (await engine.store(StoreRequest("Dr Okafor opened her own practice; we go there now."))).memory_id
    await engine.links.link(wrong, old, "update", ASSISTANT)
    await engine.links.link(right, old, "update", ASSISTANT)
    assert (await engine.get(old)).superseded_by == right
    assert (await engine.get(wrong)).supersedes is None  # no link left pointing at it


async def test_a_batch_links_a_reworded_fact_and_offers_an_older_value(engine: MemoryEngine) -> None:
    old = (await engine.store(StoreRequest("Uses an old Samsung Galaxy S8."))).memory_id
    batch = await engine.store_many(
        [
            {"content": "Takes coffee black, no sugar."},
            {"content": "Does yoga on Wednesday evenings."},
            {"content": "Takes coffee black with no sugar, usually a double espresso in the morning."},
            {"content": "Got a new phone, an iPhone 13, from my son for my birthday."},
        ]
    )
    coffee, _yoga, fuller, mac = batch.results
    assert (fuller.linked, fuller.linked_to, fuller.link_kind) == ("supersedes", coffee.memory_id, "duplicate")
    assert (await engine.get(coffee.memory_id)).superseded_by == fuller.memory_id
    assert mac.linked is None and [m.memory_id for m in mac.may_replace] == [old]
    assert "may_replace" in batch.message
    assert "linked" in batch.message


async def test_two_sisters_by_name_are_two_holders(engine: MemoryEngine) -> None:
    """Before: "User's sister Anna" was linked as an update of "User's sister Inês" (one holder, "User's")."""
    await engine.store(StoreRequest("User's sister Inês lives in Porto and teaches chemistry."))
    anna = await engine.store(StoreRequest("User's sister Anna lives in Lisbon and works as an architect."))
    assert anna.linked is None and anna.may_replace == []
    moved = await engine.store(StoreRequest("User's sister Anna moved to Madrid last year."))
    assert moved.linked is not None or moved.may_replace  # the same sister: linked or offered
