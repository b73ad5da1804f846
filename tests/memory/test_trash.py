"""The trash on the real model and a real embedded Chroma: a delete keeps the memory for the owner
to restore (id, text, tags, type, times, vector, keyword entry), the trash empties only when the
owner says so or after TRASH_DAYS, and a restore never makes two copies of one text."""

from __future__ import annotations

import logging

import pytest

from symbiote.errors import MemoryNotFoundError
from symbiote.memory import trash as trash_module
from symbiote.memory.engine import MemoryEngine
from symbiote.memory.requests import SearchRequest, StoreRequest
from symbiote.memory.trash import ASSISTANT, OWNER


async def test_a_deleted_memory_is_gone_from_search_and_comes_back_whole(engine: MemoryEngine) -> None:
    text = "The owner's sister Ana lives in Porto. She teaches the cello at the conservatory."
    stored = await engine.store(StoreRequest(text, ["family"], "personal", 0.9, bookmarked=True))
    await engine.store(StoreRequest("Prefers tea to coffee in the morning"))
    await engine.passages_indexed()
    before = await engine.search(SearchRequest("where does Ana live"))
    assert before.results[0].memory_id == stored.memory_id
    vectors_before = (await engine.bulk.vectors([stored.memory_id]))[stored.memory_id]
    assert len(vectors_before) == 3  # the whole text and its two sentences

    deleted = await engine.delete(stored.memory_id)
    assert deleted.deleted and "restore" in deleted.message
    assert stored.memory_id not in [
        hit.memory_id for hit in (await engine.search(SearchRequest("where does Ana live"))).results
    ]
    assert stored.memory_id not in [
        hit.memory_id for hit in (await engine.search(SearchRequest("conservatory cello"))).results
    ]
    with pytest.raises(MemoryNotFoundError):
        await engine.get(stored.memory_id)
    assert (await engine.stats()).total_memories == 1
    with pytest.raises(MemoryNotFoundError):  # twice: the second finds nothing to delete
        await engine.delete(stored.memory_id)

    page = await engine.trash.page(0, 10)
    assert page.total == 1 and page.days == trash_module.TRASH_DAYS
    [item] = page.items
    assert item.deleted_by == ASSISTANT and item.memory.content == text

    report = await engine.trash.restore([stored.memory_id])
    assert report.restored == [stored.memory_id] and report.clashes == []
    back = await engine.get(stored.memory_id)
    assert (back.content, back.tags, back.type, back.confidence, back.bookmarked, back.timestamp) == (
        text,
        ["family"],
        "personal",
        0.9,
        True,
        stored.timestamp,
    )
    await engine.passages_indexed()
    assert (await engine.search(SearchRequest("where does Ana live"))).results[0].memory_id == stored.memory_id
    assert (await engine.search(SearchRequest("conservatory cello"))).results[
        0
    ].memory_id == stored.memory_id  # keyword index
    vector_after = (await engine.bulk.vectors([stored.memory_id]))[stored.memory_id]
    assert float(vector_after[0] @ vectors_before[0]) > 0.9999 and len(vector_after) == 3  # passages indexed again
    assert (await engine.trash.page(0, 10)).total == 0
    assert (await engine.stats()).total_memories == 2


async def test_the_owner_deletes_a_selection_restores_part_and_empties_the_rest(engine: MemoryEngine) -> None:
    ids = [
        (await engine.store(StoreRequest(f"Reading list entry number {n}: a novel by author {n}"))).memory_id
        for n in range(5)
    ]
    assert sorted(await engine.bulk.delete_many(ids)) == sorted(ids)
    page = await engine.trash.page(0, 3)
    assert page.total == 5 and len(page.items) == 3 and {i.deleted_by for i in page.items} == {OWNER}
    restored = await engine.trash.restore(ids[:2] + ["mem_1"])
    assert sorted(restored.restored) == sorted(ids[:2]) and restored.missing == ["mem_1"]
    assert sorted(await engine.trash.purge(None)) == sorted(ids[2:])
    assert (await engine.trash.page(0, 10)).total == 0
    assert (await engine.list_memories(10)).count == 2


async def test_a_restore_never_makes_a_second_copy_of_a_text(engine: MemoryEngine) -> None:
    first = await engine.store(StoreRequest("Allergic to penicillin"))
    await engine.delete(first.memory_id)
    again = await engine.store(StoreRequest("Allergic to penicillin"))  # the assistant stores it anew meanwhile
    assert again.memory_id != first.memory_id and again.status == "stored"
    report = await engine.trash.restore([first.memory_id])
    assert report.restored == [] and report.clashes == [
        (first.memory_id, f"its text is stored again as {again.memory_id}")
    ]
    assert (await engine.trash.page(0, 10)).total == 1  # kept, not dropped silently


async def test_the_trash_empties_itself_after_its_period_and_says_so(
    engine: MemoryEngine, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    old = await engine.store(StoreRequest("A memory deleted long ago"))
    recent = await engine.store(StoreRequest("A memory deleted just now"))
    await engine.delete(old.memory_id)
    real_now = trash_module.now_us
    monkeypatch.setattr(
        trash_module, "now_us", lambda: real_now() + (trash_module.TRASH_DAYS - 1) * trash_module.DAY_US
    )
    await engine.bulk.delete_many([recent.memory_id])  # deleted 29 days later
    monkeypatch.setattr(
        trash_module, "now_us", lambda: real_now() + (trash_module.TRASH_DAYS + 1) * trash_module.DAY_US
    )
    with caplog.at_level(logging.INFO, logger="symbiote.memory.trash"):
        assert await engine.trash.purge_expired() == [old.memory_id]
    assert "deleted for good after 30 days" in caplog.text and old.memory_id in caplog.text
    assert [i.memory.memory_id for i in (await engine.trash.page(0, 10)).items] == [recent.memory_id]


async def test_an_undo_and_the_expiry_read_the_trash_from_either_end_past_one_read(
    engine: MemoryEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(trash_module, "SCAN", 2)  # several reads of the trash for a handful of memories
    ids = [(await engine.store(StoreRequest(f"Shopping list item {n}: {n} apples"))).memory_id for n in range(7)]
    real_now = trash_module.now_us
    day = trash_module.DAY_US
    await engine.trash.move(ids[:3], OWNER, real_now() - (trash_module.TRASH_DAYS + 2) * day)  # expired
    await engine.trash.move(ids[3:6], OWNER, real_now() - day)  # the expired three go first, read in two
    latest = real_now()
    await engine.trash.move(ids[6:], OWNER, latest)
    assert (await engine.trash.page(0, 10)).total == 4
    assert sorted(await engine.trash.deletion(real_now() - day - 1)) == []
    assert await engine.trash.deletion(latest) == [ids[6]]
    older = (await engine.trash.page(0, 10)).items[1].deleted_us
    assert sorted(await engine.trash.deletion(older)) == sorted(ids[3:6])


async def test_a_restored_memory_gets_its_links_back_on_both_sides(engine: MemoryEngine) -> None:
    older = await engine.store(StoreRequest("The team standup is at 9:30 on weekdays"))
    newer = await engine.store(StoreRequest("The team standup moved to 10:00 on weekdays", replaces=[older.memory_id]))
    other = await engine.store(StoreRequest("Lunch with the design team is on Thursdays"))

    async def links(mid: str) -> tuple[str | None, str | None]:
        memory = (await engine.bulk.fetch([mid]))[mid]
        return memory.supersedes, memory.superseded_by

    assert await links(newer.memory_id) == (older.memory_id, None)
    for gone, partner in ((newer.memory_id, older.memory_id), (older.memory_id, newer.memory_id)):
        deleted = await engine.delete(gone)
        assert deleted.deleted and await links(partner) == (None, None)  # nothing points into the trash
        assert (await engine.trash.restore([gone])).restored == [gone]  # the undo of that forget
        assert await links(newer.memory_id) == (older.memory_id, None)
        assert await links(older.memory_id) == (None, newer.memory_id)
    # a partner gone meanwhile: the restored memory points at no one
    await engine.delete(older.memory_id)
    await engine.delete(newer.memory_id)
    await engine.trash.purge([older.memory_id])
    assert (await engine.trash.restore([newer.memory_id])).restored == [newer.memory_id]
    assert await links(newer.memory_id) == (None, None) and await links(other.memory_id) == (None, None)
