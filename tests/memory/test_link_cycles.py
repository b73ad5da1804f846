"""Issue 49, finding 5, on the real engine (real model, real Chroma): no path makes a link cycle.
Before, the same text stored again with `replaces` (the duplicate path) linked without the check,
and `link_memories` walked at most 1,000 links, so a longer chain could be closed into a loop."""

from __future__ import annotations

from dataclasses import replace

import pytest

from symbiote.errors import InvalidInputError
from symbiote.memory.engine import MemoryEngine
from symbiote.memory.links import ASSISTANT
from symbiote.memory.requests import StoreRequest
from tests.conftest import volume

# One more link than the walk followed before, under --soak; a run's sample is a chain of some hundreds
# (the walk has no limit, so the sample is walked to its end the same way).
CHAIN = volume(1_002, 200, __name__).count


async def test_the_same_text_stored_again_cannot_replace_its_replacement(engine: MemoryEngine) -> None:
    old = (await engine.store(StoreRequest("The spare house key is with Mrs Patel at number 12."))).memory_id
    new = await engine.store(StoreRequest("The spare key moved to the lockbox by the back door.", replaces=[old]))
    assert (await engine.get(old)).superseded_by == new.memory_id
    with pytest.raises(InvalidInputError, match="cycle"):
        await engine.store(
            StoreRequest("The spare house key is with Mrs Patel at number 12.", replaces=[new.memory_id])
        )
    assert (await engine.get(new.memory_id)).superseded_by is None  # the old value does not rank first
    assert (await engine.get(old)).superseded_by == new.memory_id


@pytest.mark.volume
async def test_a_chain_longer_than_any_limit_cannot_be_closed(engine: MemoryEngine) -> None:
    ids: list[str] = []
    for start in range(0, CHAIN, 100):
        items = [
            {"content": f"Chain link {i}: the tide table for week {i} of the harbour log."}
            for i in range(start, min(start + 100, CHAIN))
        ]
        ids += [r.memory_id for r in (await engine.store_many(items)).results if r.memory_id]
    assert len(ids) == CHAIN
    stored = await engine.bulk.fetch(ids)
    chain = [  # each replaced by the next: ids[-1] replaces ... replaces ids[0]
        replace(
            stored[mid],
            supersedes=ids[i - 1] if i else None,
            superseded_by=ids[i + 1] if i + 1 < CHAIN else None,
            link_kind="update",
            link_by=ASSISTANT if i + 1 < CHAIN else None,
        )
        for i, mid in enumerate(ids)
    ]
    await engine.bulk.write_links(chain)
    with pytest.raises(InvalidInputError, match="cycle"):
        await engine.links.link(ids[0], ids[-1], "update", ASSISTANT)
    assert (await engine.get(ids[-1])).superseded_by is None


async def test_a_link_the_owner_kept_is_not_undone_by_a_client(engine: MemoryEngine) -> None:
    """Info 7, decided: a client (the assistant, an API key) cannot unlink what the owner reviewed and kept."""
    old = (await engine.store(StoreRequest("Our landlord is Mr Haddad."))).memory_id
    new = (
        await engine.store(StoreRequest("The flat was sold; the new landlord is Ms Ortiz.", replaces=[old]))
    ).memory_id
    await engine.links.keep(old)
    with pytest.raises(InvalidInputError, match="kept"):
        await engine.links.unlink(new, old)
    assert (await engine.get(old)).superseded_by == new
