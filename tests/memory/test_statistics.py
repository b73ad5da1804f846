"""The owner's statistics on the real model and a real embedded Chroma: additions per week, by
client and by conversation, the newest, the most edited, the trash's size."""

from __future__ import annotations

from dataclasses import replace

from symbiote.memory.clock import instant_us, now_us
from symbiote.memory.engine import MemoryEngine
from symbiote.memory.requests import StoreRequest, UpdateRequest
from symbiote.memory.statistics import WeekCount, weekly
from symbiote.memory.writing import draft


async def test_who_stored_what_when_and_what_was_edited(engine: MemoryEngine) -> None:
    week = 7 * 86_400 * 1_000_000
    old = replace(
        draft("Kept from an old export: the flat's lease ends in June.", None, None, None, None, False),
        memory_id="mem_1700000000000000000001",
        created_us=now_us() - 3 * week,
    )
    await engine.bulk.import_memories([(old, None)])
    a = await engine.store(StoreRequest("Prefers aisle seats on short flights.", client="claude-ai"))
    b = await engine.store(StoreRequest("Learning Portuguese on Duolingo.", client="claude-ai"))
    await engine.store(StoreRequest("Drinks oolong tea in the afternoon.", client="ChatGPT"))
    await engine.store(
        StoreRequest(
            "Plans a trip to Lisbon in spring.", confidence=0.9, conversation_id="trip-chat", client="claude-ai"
        )
    )
    await engine.store(StoreRequest("Own note typed in the console.", client="console"))
    gone = await engine.store(StoreRequest("A memory deleted afterwards.", client="claude-ai"))
    await engine.update(UpdateRequest(b.memory_id, tags=["languages"]))
    await engine.update(UpdateRequest(b.memory_id, confidence=0.8))
    await engine.update(UpdateRequest(a.memory_id, bookmarked=True))
    await engine.delete(gone.memory_id)

    stats = await engine.owner_stats(weeks=5, top=3)
    assert stats.total == 6 and stats.trash == 1
    assert [w.added for w in stats.added_per_week] == [0, 1, 0, 0, 5]
    assert [(s.name, s.memories) for s in stats.by_client] == [
        ("claude-ai", 3),
        ("ChatGPT", 1),
        ("console", 1),
        ("import", 1),
    ]
    assert [(s.name, s.memories) for s in stats.by_conversation] == [("trip-chat", 1)]
    assert [m.preview for m in stats.newest] == [
        "Own note typed in the console.",
        "Plans a trip to Lisbon in spring.",
        "Drinks oolong tea in the afternoon.",
    ]
    assert [(m.memory_id, m.edits) for m in stats.most_edited] == [(b.memory_id, 2), (a.memory_id, 1)]
    assert stats.most_edited[0].updated_us is not None
    assert stats.duplicates == []


def test_weeks_run_monday_to_sunday_in_utc() -> None:
    now = instant_us("2026-11-26T12:00:00Z")  # a Thursday
    heads = [
        replace(draft(t, None, None, None, None, False), created_us=instant_us(when))
        for t, when in [
            ("a", "2026-11-23T00:00:00Z"),  # Monday: this week
            ("b", "2026-11-22T23:59:59Z"),  # Sunday: the week before
            ("c", "2026-11-16T00:00:00Z"),
        ]
    ]
    assert weekly(heads, 3, now) == [
        WeekCount("2026-11-09", 0),
        WeekCount("2026-11-16", 2),
        WeekCount("2026-11-23", 1),
    ]


async def test_the_figures_follow_this_instance_s_writes_without_a_new_scan(engine: MemoryEngine) -> None:
    first = await engine.store(StoreRequest("Keeps the spare key with the neighbour.", client="claude-ai"))
    assert (await engine.owner_stats()).total == 1  # the one scan
    second = await engine.store(StoreRequest("Prefers trains to planes in Europe.", client="ChatGPT"))
    await engine.update(UpdateRequest(first.memory_id, type="fact"))
    figures = await engine.owner_stats(top=2)
    assert figures.total == 2 and [(s.name, s.memories) for s in figures.by_client] == [
        ("ChatGPT", 1),
        ("claude-ai", 1),
    ]
    assert [m.memory_id for m in figures.newest] == [second.memory_id, first.memory_id]
    assert [(m.memory_id, m.edits) for m in figures.most_edited] == [(first.memory_id, 1)]
    await engine.delete(second.memory_id)
    after = await engine.owner_stats()
    assert after.total == 1 and after.trash == 1 and [s.name for s in after.by_client] == ["claude-ai"]
    await engine.trash.restore([second.memory_id])
    assert (await engine.owner_stats()).total == 2
