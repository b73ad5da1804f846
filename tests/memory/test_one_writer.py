"""One writer per memory (issue 67): changes to one memory at once are made one after the other,
never over each other, and a link is on both of its memories or on neither, while links are made,
undone and their memories changed or deleted at once; undoing a forget brings its links back.

The races are made certain, not likely: the first writer is held at the store, at its write
(`tests.memory.held_writes`), until the second has been asked for. Calls go through the SDK's
client to the real server object; the store and the model are the real ones."""

from __future__ import annotations

import asyncio
import os
import random
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from symbiote.config import Settings
from symbiote.errors import ChangedMeanwhileError, InvalidInputError
from symbiote.memory import CARD, OWNER
from symbiote.memory.engine import MemoryEngine
from symbiote.memory.requests import StoreRequest, UpdateRequest
from symbiote.memory.validation import OUTDATED
from symbiote.storage import StoredMemory
from tests.chroma_server import ChromaServerProcess, chroma_server  # noqa: F401  (fixture)
from tests.conftest import make_runtime
from tests.memory.held_writes import Held, hold_first

# Facts about different things: none is linked to another by the server's rule.
FACTS = [
    "The dentist is Dr Okafor on Mill Lane.",
    "Our wifi router is in the hall cupboard.",
    "Leo is allergic to peanuts.",
    "The car insurance renews every April.",
    "Grandma's recipe for plum cake uses cardamom.",
    "The office badge number is 40417.",
]
WORKERS = 6
MEMORIES = 30
OPERATIONS = int(os.environ.get("SYMBIOTE_TEST_LINK_OPERATIONS", "20"))  # per worker


def one_sided(memories: dict[str, StoredMemory]) -> list[str]:
    """Every link not on both of its memories: a memory replaced by one not stored, or one naming
    in `supersedes` a memory that it does not replace."""
    problems = []
    for m in memories.values():
        if m.superseded_by and m.superseded_by not in memories:
            problems.append(f"{m.memory_id} is replaced by {m.superseded_by}, which is not stored")
        other = memories.get(m.supersedes or "")
        if m.supersedes and (other is None or other.superseded_by != m.memory_id):
            problems.append(f"{m.memory_id} names {m.supersedes}, which it does not replace")
    return problems


def cycles(memories: dict[str, StoredMemory]) -> list[str]:
    found = []
    for m in memories.values():
        seen, current = {m.memory_id}, m
        while current.superseded_by in memories:
            current = memories[current.superseded_by]
            if current.memory_id in seen:
                found.append(m.memory_id)
                break
            seen.add(current.memory_id)
    return found


async def records(engine: MemoryEngine, ids: Sequence[str]) -> dict[str, StoredMemory]:
    return await engine.bulk.fetch(list(ids))


@asynccontextmanager
async def held_server(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, write: str
) -> AsyncIterator[tuple[Client, MemoryEngine, Held, list[str]]]:
    """A server over a store whose first `write` (once armed) is held; FACTS stored, their ids given."""
    held = hold_first(monkeypatch, write)
    held.armed = False
    runtime = make_runtime(settings)
    async with Client(runtime.server) as client:  # type: ignore[arg-type]
        stored = await client.call_tool("store_memories", {"memories": [{"content": fact} for fact in FACTS]})
        ids = [result["memory_id"] for result in stored.structured_content["results"]]  # type: ignore[index]
        assert not any(m.supersedes or m.superseded_by for m in (await records(runtime.engine, ids)).values())
        held.armed = True
        yield client, runtime.engine, held, ids


async def first_then(held: Held, first: Any, second: Any) -> list[Any]:
    """Start `first`, wait until it is held at its write, start `second`, let the first go."""
    one = asyncio.ensure_future(first)
    assert await asyncio.to_thread(held.arrived.wait, 60)
    two = asyncio.ensure_future(second)
    held.release.set()
    answers = await asyncio.gather(one, two)
    assert not any(answer.is_error for answer in answers), [answer.content for answer in answers]
    return answers


async def test_two_links_to_one_memory_at_once_leave_both_ends_agreeing(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both make `b` replaced: the second, made second, wins, and the first's newer memory no longer
    names `b` (before: it still did, a link on one end only)."""
    async with held_server(settings, monkeypatch, "set_links") as (client, engine, held, ids):
        a, b, c = ids[:3]
        await first_then(
            held,
            client.call_tool("link_memories", {"newer_id": a, "older_id": b}),
            client.call_tool("link_memories", {"newer_id": c, "older_id": b}),
        )
        now = await records(engine, ids)
    assert (now[b].superseded_by, now[c].supersedes, now[a].supersedes) == (c, b, None)
    assert one_sided(now) == []


async def test_an_update_while_a_link_is_made_keeps_both(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    async with held_server(settings, monkeypatch, "set_links") as (client, engine, held, ids):
        a, b = ids[:2]
        await first_then(
            held,
            client.call_tool("link_memories", {"newer_id": a, "older_id": b}),
            client.call_tool("update_memory", {"memory_id": b, "content": "Our wifi router moved to the study."}),
        )
        now = await records(engine, ids)
    assert (now[b].content, now[b].superseded_by, now[a].supersedes) == ("Our wifi router moved to the study.", a, b)


async def test_a_delete_while_a_link_is_made_leaves_no_link_pointing_at_nothing(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with held_server(settings, monkeypatch, "set_links") as (client, engine, held, ids):
        a, b = ids[:2]
        await first_then(
            held,
            client.call_tool("link_memories", {"newer_id": a, "older_id": b}),
            client.call_tool("delete_memory", {"memory_id": a}),
        )
        now = await records(engine, ids)
        assert a not in now and now[b].superseded_by is None and one_sided(now) == []
        assert (await engine.trash.restore([a])).restored == [a]  # and undone, the link is back
        now = await records(engine, ids)
    assert (now[b].superseded_by, now[a].supersedes) == (a, b) and one_sided(now) == []


@pytest.mark.slow
async def test_six_workers_linking_thirty_memories_leave_no_link_one_sided(settings: Settings) -> None:
    """Links made and undone at random by six workers at once (before: 7 one-sided in a run)."""
    seed = random.randrange(2**32)
    print(f"seed {seed}")
    draw = random.Random(seed)
    engine = make_runtime(settings).engine
    words = ["harbour", "violin", "quartz", "meadow", "lantern", "falcon", "copper", "orchid", "glacier", "saffron"]
    items = [{"content": f"Note {i}: the {words[i % 10]} code is {draw.randrange(10**6):06d}-{i}."} for i in range(30)]
    ids = [result.memory_id for result in (await engine.store_many(items)).results]
    assert len(set(ids)) == MEMORIES
    refused = 0

    async def worker(rng: random.Random) -> None:
        nonlocal refused
        for _ in range(OPERATIONS):
            newer, older = rng.sample(ids, 2)
            try:
                if rng.random() < 0.75:
                    await engine.links.link(newer, older, rng.choice(["update", "duplicate"]), "assistant")
                else:
                    await engine.links.unlink(newer, older)
            except InvalidInputError:  # a cycle, or no such link to undo: said, nothing changed
                refused += 1

    await asyncio.gather(*(worker(random.Random(draw.random())) for _ in range(WORKERS)))
    now = await records(engine, ids)
    linked = sum(1 for m in now.values() if m.superseded_by)
    print(f"{linked} links left, {refused} refused of {WORKERS * OPERATIONS}")
    assert one_sided(now) == [] and cycles(now) == [], seed
    assert linked > 0


async def test_undoing_a_forget_brings_its_links_back_as_they_were(engine: MemoryEngine) -> None:
    """Forgotten and restored, a memory is linked again both ways: who made the link and the
    owner's review come back too (before: every link was gone)."""
    old = (await engine.store(StoreRequest("The gym membership costs 30 a month."))).memory_id
    new = (await engine.store(StoreRequest("The gym now costs 35 a month.", replaces=[old]))).memory_id
    await engine.links.keep(old)
    before = await records(engine, [old, new])
    for forgotten in (new, old):
        await engine.delete(forgotten, CARD)
        assert one_sided(await records(engine, [old, new])) == []
        assert (await engine.trash.restore([forgotten], deleted_by=CARD)).restored == [forgotten]
        now = await records(engine, [old, new])
        assert now == before, forgotten
    # Forgotten together and restored together (the console's undo of one deletion): the same.
    await engine.bulk.delete_many([old, new])
    assert (await engine.trash.restore([old, new], deleted_by=OWNER)).restored == [old, new]
    assert await records(engine, [old, new]) == before


async def test_a_restored_memory_takes_back_only_the_links_still_free(engine: MemoryEngine) -> None:
    """The middle of a chain comes back between both; a link its partner made meanwhile stands."""
    one = (await engine.store(StoreRequest("Piano lessons are on Mondays."))).memory_id
    two = (await engine.store(StoreRequest("Piano lessons moved to Tuesdays.", replaces=[one]))).memory_id
    three = (await engine.store(StoreRequest("Piano lessons are on Thursdays now.", replaces=[two]))).memory_id
    await engine.delete(two)
    await engine.trash.restore([two])
    now = await records(engine, [one, two, three])
    assert (now[one].superseded_by, now[two].supersedes, now[two].superseded_by, now[three].supersedes) == (
        two,
        one,
        three,
        two,
    )
    assert one_sided(now) == []
    await engine.delete(three)
    other = (await engine.store(StoreRequest("Piano teacher is Mrs Ilic.", replaces=[two]))).memory_id
    await engine.trash.restore([three])
    now = await records(engine, [one, two, three, other])
    assert (now[two].superseded_by, now[three].supersedes, now[three].superseded_by) == (other, None, None)
    assert one_sided(now) == [] and cycles(now) == []


@pytest.mark.server
async def test_on_a_chroma_server_an_update_over_another_instance_s_change_is_refused(
    chroma_server: ChromaServerProcess,
    tmp_path: Path,
    model_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two instances hold no lock of each other's: an update whose memory the other changed while
    it embedded the new text says so and writes nothing (before: it wrote the mark over)."""
    shared = {"chroma_host": "127.0.0.1", "chroma_port": chroma_server.port, "chroma_database": "one-writer"}
    two = make_runtime(Settings(chromadb_path=tmp_path / "two", model_dir=model_dir, **shared))
    mid = (await two.engine.store(StoreRequest("The bins go out on Tuesday night.", tags=["home"]))).memory_id
    reads: list[str] = []

    def second_read_of_it(args: tuple[Any, ...]) -> bool:  # the update's look before it writes
        if list(args[0]) == [mid]:
            reads.append(mid)
        return len(reads) == 2

    held = hold_first(monkeypatch, "get", second_read_of_it)
    one = make_runtime(Settings(chromadb_path=tmp_path / "one", model_dir=model_dir, **shared))
    try:
        changing = one.engine.update(UpdateRequest(mid, content="The bins go out on Monday night."))
        update = asyncio.ensure_future(changing)
        assert await asyncio.to_thread(held.arrived.wait, 60)
        await two.engine.update(UpdateRequest(mid), outdated=True)  # the other instance's mark, meanwhile
        held.release.set()
        with pytest.raises(ChangedMeanwhileError, match="Read it again"):
            await update
        memory = await two.engine.get(mid)
        assert (memory.content, memory.tags) == ("The bins go out on Tuesday night.", ["home", OUTDATED])
    finally:
        one.close()
        two.close()
