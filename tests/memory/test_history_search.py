"""Conversation history on both backends (embedded Chroma, a Chroma server): search on the
memories' 0-100 scale with the memory search's cut-off, and deleting one conversation's turns."""

from __future__ import annotations

import uuid

import pytest

from symbiote.errors import InvalidInputError
from symbiote.memory.history import ConversationHistory
from symbiote.memory.requests import StoreRequest
from symbiote.memory.searching import RELEVANCE_CUTOFF
from symbiote.runtime import Runtime


def new_id() -> str:
    return f"c-{uuid.uuid4().hex[:10]}"


async def test_search_scores_turns_0_to_100_and_cuts_at_the_memory_searchs_cut_off(
    history: ConversationHistory,
) -> None:
    cid = new_id()
    await history.append(cid, "user", "We are flying to Lisbon on the 3rd of May and staying in Alfama.")
    await history.append(cid, "user", "The tomatoes on the balcony need watering every evening in July.")
    await history.append(cid, "assistant", "Your dentist appointment moved to Thursday at nine.")
    everything = await history.search("when do we fly to Lisbon?", cid, 10, min_relevance=0)
    assert len(everything) == 3 and all(0 <= hit.relevance_score <= 100 for hit in everything)
    assert everything[0].text.startswith("We are flying to Lisbon") and everything[0].relevance_score >= 30
    kept = await history.search("when do we fly to Lisbon?", cid, 10)
    assert kept == [hit for hit in everything if hit.relevance_score >= RELEVANCE_CUTOFF]
    assert len(kept) < len(everything)  # the tomatoes and the dentist are under the cut-off
    with pytest.raises(InvalidInputError, match="min_relevance must be a number from 0 to 100"):
        await history.search("Lisbon", cid, 5, min_relevance=0.5j)


async def test_deleting_a_conversation_removes_its_turns_only(
    backend_runtime: Runtime, history: ConversationHistory
) -> None:
    gone, stays = new_id(), new_id()
    for n in range(3):
        await history.append(gone, "user", f"turn {n} of the conversation that goes")
    await history.append(stays, "user", "this conversation stays")
    memory = await backend_runtime.engine.store(StoreRequest("Keeps bees on the allotment."))
    assert await history.delete_conversation(gone) == 3
    assert (await history.get(gone)).total_turns == 0
    assert (await history.get(stays)).total_turns == 1
    assert (await backend_runtime.engine.get(memory.memory_id)).content == "Keeps bees on the allotment."
    assert await history.delete_conversation(gone) == 0  # again: nothing left, nothing else touched
    await history.append(gone, "user", "a new start")  # the id can be used again, from turn 0
    assert [t.turn_index for t in (await history.get(gone)).turns] == [0]
    with pytest.raises(InvalidInputError, match="conversation_id is empty"):
        await history.delete_conversation("")
