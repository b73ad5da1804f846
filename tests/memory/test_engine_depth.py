"""Typed and gated memories, update, batches, retention, quotas, stats and failure handling.

Real model, real Chroma. Disk-full and read-only storage are real too: a small tmpfs mounted
for the test (skipped where mounting is not allowed).
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import replace
from pathlib import Path

import pytest

from symbiote.config import Settings
from symbiote.errors import InvalidInputError, MemoryNotFoundError, StoreUnavailableError
from symbiote.memory.clock import iso_utc
from symbiote.memory.engine import EnginePolicy, MemoryEngine, QuotaExceededError
from symbiote.memory.requests import SearchRequest, StoreRequest, UpdateRequest
from symbiote.storage import MemoryStore, StoredMemory, content_hash, reset_store
from tests.conftest import make_runtime


async def engine_with(settings: Settings, policy: EnginePolicy | None = None, **changes: object) -> MemoryEngine:
    engine = make_runtime(replace(settings, **changes)).engine  # type: ignore[arg-type]
    if policy is not None:
        engine.policy = policy
    return engine


async def test_typed_memories_and_search_filters(engine: MemoryEngine) -> None:
    await engine.store(
        StoreRequest("Prefers tea over coffee in the morning", ["drinks", "morning"], type="preference", confidence=0.9)
    )
    await engine.store(StoreRequest("Drinks espresso after lunch", ["drinks"], type="preference", confidence=0.5))
    await engine.store(
        StoreRequest("The espresso machine is a Gaggia Classic", ["kitchen"], type="fact", confidence=1.0)
    )
    base = {"query": "what does the user drink?", "min_relevance": 0, "limit": 10}
    every = {h.content for h in (await engine.search(SearchRequest(**base))).results}
    assert len(every) == 3
    prefs = {h.content for h in (await engine.search(SearchRequest(**base, type="preference"))).results}
    assert prefs == {"Prefers tea over coffee in the morning", "Drinks espresso after lunch"}
    sure = {h.content for h in (await engine.search(SearchRequest(**base, min_confidence=0.8))).results}
    assert sure == {"Prefers tea over coffee in the morning", "The espresso machine is a Gaggia Classic"}
    any_tag = {h.content for h in (await engine.search(SearchRequest(**base, tags=["morning", "kitchen"]))).results}
    assert any_tag == {"Prefers tea over coffee in the morning", "The espresso machine is a Gaggia Classic"}
    all_tags = {
        h.content
        for h in (await engine.search(SearchRequest(**base, tags=["drinks", "morning"], tag_mode="all"))).results
    }
    assert all_tags == {"Prefers tea over coffee in the morning"}
    hit = (await engine.search(SearchRequest(**base, type="fact"))).results[0]
    assert (hit.type, hit.confidence) == ("fact", 1.0)
    with pytest.raises(InvalidInputError, match="type"):
        await engine.store(StoreRequest("x", type="two words"))
    with pytest.raises(InvalidInputError, match="confidence"):
        await engine.store(StoreRequest("x", confidence=1.5))


async def test_write_policy_for_memories_drawn_from_a_conversation(engine: MemoryEngine) -> None:
    with pytest.raises(InvalidInputError, match="confidence >= 0.7"):
        await engine.store(StoreRequest("Might like jazz", conversation_id="c1"))
    with pytest.raises(InvalidInputError, match="confidence >= 0.7"):
        await engine.store(StoreRequest("Might like jazz", conversation_id="c1", confidence=0.5))
    for i in range(3):
        assert (
            await engine.store(StoreRequest(f"Confident fact {i}", conversation_id="c1", confidence=0.9))
        ).status == "stored"
    with pytest.raises(InvalidInputError, match="MEMORY_MAX_PER_WINDOW=3"):
        await engine.store(StoreRequest("A fourth one", conversation_id="c1", confidence=0.95))
    assert (
        await engine.store(StoreRequest("Another conversation", conversation_id="c2", confidence=0.9))
    ).status == "stored"
    assert (
        await engine.store(StoreRequest("The user asked me to remember this"))
    ).status == "stored"  # explicit: no policy


async def test_update_keeps_id_and_time_and_reindexes(engine: MemoryEngine) -> None:
    stored = await engine.store(StoreRequest("Works at Initech as a developer", ["work"], type="fact"))
    updated = await engine.update(
        UpdateRequest(stored.memory_id, content="Works at Globex as an engineering manager", tags=[])
    )
    assert updated.reembedded and updated.memory.memory_id == stored.memory_id
    assert updated.memory.timestamp == stored.timestamp and updated.memory.updated_at
    assert updated.memory.tags == [] and updated.memory.type == "fact"
    fresh = await engine.get(stored.memory_id)
    assert fresh.content == "Works at Globex as an engineering manager" and fresh.tags == []
    assert [h.memory_id for h in (await engine.search(SearchRequest("Globex"))).results] == [stored.memory_id]
    assert all(
        "Initech" not in h.content for h in (await engine.search(SearchRequest("Initech", min_relevance=0))).results
    )
    marked = await engine.update(UpdateRequest(stored.memory_id, bookmarked=True))
    assert not marked.reembedded and marked.memory.bookmarked
    assert (await engine.get(stored.memory_id)).content == "Works at Globex as an engineering manager"
    with pytest.raises(MemoryNotFoundError):
        await engine.update(UpdateRequest("mem_00000000000000000001", content="x"))


async def test_batch_store_is_all_or_nothing(engine: MemoryEngine) -> None:
    items = [{"content": f"Batch fact number {i}", "tags": ["batch"], "type": "fact"} for i in range(50)]
    result = await engine.store_many(items)
    assert result.stored == 50 and len({r.memory_id for r in result.results}) == 50
    assert (await engine.stats()).total_memories == 50
    bad = [{"content": "fine"}, {"content": "   "}, {"content": "also fine"}]
    with pytest.raises(InvalidInputError, match="item 2.*Nothing was stored"):
        await engine.store_many(bad)
    assert (await engine.stats()).total_memories == 50
    again = await engine.store_many(["Batch fact number 3", "Brand new fact", "brand new fact"])
    assert [r.status for r in again.results] == ["duplicate", "stored", "duplicate"]
    assert again.results[1].memory_id == again.results[2].memory_id
    assert again.stored == 1


async def test_get_many_keeps_order_with_nulls(engine: MemoryEngine) -> None:
    a = await engine.store(StoreRequest("first"))
    b = await engine.store(StoreRequest("second"))
    missing = "mem_00000000000000000001"
    got = await engine.get_many([b.memory_id, missing, a.memory_id])
    assert [m.content if m else None for m in got] == ["second", None, "first"]


async def test_retention_removes_old_memories_except_bookmarked(
    settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    engine = await engine_with(settings, EnginePolicy(retention_days=30))
    try:
        store = await engine._io.opened()
        old_us = time.time_ns() // 1000 - 40 * 86_400 * 1_000_000
        vectors = await engine._embedder.embed(["an old note"])
        for i, bookmarked in enumerate((False, True, False)):
            micros = old_us + i
            text = f"old note {i}"
            store.call(
                MemoryStore.add,
                StoredMemory(
                    f"mem_{micros:016d}0000",
                    text,
                    iso_utc(micros),
                    micros,
                    (),
                    content_hash(text),
                    bookmarked=bookmarked,
                ),
                vectors,
                [text],
            )
        await engine.store(StoreRequest("a new note"))
        with caplog.at_level(logging.INFO):
            result = await engine.apply_retention()
        assert (result.removed, result.kept_bookmarked) == (2, 1)
        remaining = {m.content for m in (await engine.list_memories(limit=10)).memories}
        assert remaining == {"old note 1", "a new note"}
        assert "removed 2" in caplog.text and "skipped 1 bookmarked" in caplog.text
    finally:
        engine.close()


async def test_with_retention_set_the_warm_up_stays_on_as_the_cleanup_and_removes_an_old_memory(
    settings: Settings,
) -> None:
    engine = await engine_with(settings, EnginePolicy(retention_days=30))
    try:
        store = await engine._io.opened()
        micros = time.time_ns() // 1000 - 40 * 86_400 * 1_000_000
        store.call(
            MemoryStore.add,
            StoredMemory(
                f"mem_{micros:016d}0000", "an old note", iso_utc(micros), micros, (), content_hash("an old note")
            ),
            await engine._embedder.embed(["an old note"]),
            ["an old note"],
        )
        kept = await engine.store(StoreRequest("a new note"))
        cleanup = asyncio.ensure_future(engine.warm_up())  # no call asks for it: the cleanup runs by itself
        try:
            for _ in range(500):
                if await engine.count() == 1:
                    break
                await asyncio.sleep(0.01)
            assert [m.memory_id for m in (await engine.list_memories(limit=10)).memories] == [kept.memory_id]
            assert not cleanup.done()  # and stays on, for the next day
        finally:
            cleanup.cancel()
            with pytest.raises(asyncio.CancelledError):
                await cleanup
    finally:
        engine.close()


async def test_retention_is_off_by_default(engine: MemoryEngine) -> None:
    result = await engine.apply_retention()
    assert result.removed == 0 and "off" in result.message


async def test_quota_warns_at_90_percent_and_refuses_at_the_limit(settings: Settings) -> None:
    engine = await engine_with(settings, EnginePolicy(max_memories=10))
    try:
        for i in range(8):
            assert (await engine.store(StoreRequest(f"quota fact {i}"))).warning is None
        ninth = await engine.store(StoreRequest("quota fact 8"))
        assert ninth.warning and "9 of 10" in ninth.warning
        await engine.store(StoreRequest("quota fact 9"))
        with pytest.raises(QuotaExceededError, match="MAX_MEMORIES"):
            await engine.store(StoreRequest("one too many"))
        with pytest.raises(QuotaExceededError):
            await engine.store_many(["batch over the limit"])
        stats = await engine.stats()
        assert (stats.total_memories, stats.quota, stats.usage_percent) == (10, 10, 100.0)
        assert (await engine.search(SearchRequest("quota fact 3"))).results  # nothing was evicted
    finally:
        engine.close()


async def test_stats_by_type_and_collection(engine: MemoryEngine) -> None:
    await engine.store(StoreRequest("a preference", type="preference"))
    await engine.store(StoreRequest("another preference", type="preference"))
    await engine.store(StoreRequest("Plain. Two sentences."))
    await engine.passages_indexed()  # its sentences are indexed right after the store
    stats = await engine.stats()
    assert stats.by_type == {"preference": 2, "untyped": 1}
    assert stats.collections["memories"] == 3 and stats.collections["keyword_index"] == 3
    assert stats.collections["passages"] == 2  # the two-sentence memory's sentences


async def test_stats_follow_every_kind_of_write_without_rescanning(settings: Settings) -> None:
    engine = await engine_with(settings)
    try:
        assert (await engine.stats()).total_memories == 0  # the one scan
        first = await engine.store(StoreRequest("Likes hiking in the Alps", ["outdoors", "travel"], type="preference"))
        await engine.store_many(
            [
                {"content": "Flight to Lisbon on 3 May", "tags": ["travel"], "type": "fact"},
                {"content": "Uses Neovim for editing", "tags": ["tools"]},
            ]
        )
        await engine.update(UpdateRequest(first.memory_id, type="personal", tags=["outdoors"]))
        listed = await engine.list_memories(limit=10)
        neovim = next(m for m in listed.memories if m.content.startswith("Uses Neovim"))
        await engine.delete(neovim.memory_id)
        live = await engine.stats()
    finally:
        engine.close()
    fresh = await engine_with(settings)  # a new instance scans what is on disk
    try:
        scanned = await fresh.stats()
    finally:
        fresh.close()
    keys = ("total_memories", "by_type", "top_tags", "oldest_timestamp", "newest_timestamp")
    assert {k: getattr(live, k) for k in keys} == {k: getattr(scanned, k) for k in keys}
    assert live.by_type == {"fact": 1, "personal": 1} and live.top_tags == {"outdoors": 1, "travel": 1}


# -- failure handling ------------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path: Path) -> Path:
    mount_point = tmp_path / f"disk-{uuid.uuid4().hex[:6]}"
    mount_point.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3M", "tmpfs", str(mount_point)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    yield mount_point
    subprocess.run(["umount", "-l", str(mount_point)], capture_output=True)


async def test_disk_full_fails_clearly_and_reads_keep_working(settings: Settings, small_disk: Path) -> None:
    # 1 MB reserve on a 3 MB disk: writes are refused before Chroma itself meets the full disk
    # (Chroma 1.5.9 can hang or stay wedged after ENOSPC; see symbiote.storage.diskspace).
    runtime = make_runtime(replace(settings, chromadb_path=small_disk / "data", min_free_mb=1))
    engine, history = runtime.engine, runtime.history
    assert history is not None
    try:
        await engine.store(StoreRequest("Stored before the disk filled up"))
        await history.history.append("c1", "user", "said before the disk filled up")
        filler = small_disk / "filler"
        with filler.open("wb") as handle:
            try:
                while True:
                    handle.write(b"\0" * 65536)
            except OSError:
                pass
        with pytest.raises(
            StoreUnavailableError, match=r"Storage full, unable to save memory: 0\.0 MB free .* 1\.0 MB in reserve"
        ):
            await engine.store(StoreRequest("After the disk filled up"))
        with pytest.raises(StoreUnavailableError, match="Storage full"):
            await engine.store_many([{"content": "batch after the disk filled up"}])
        with pytest.raises(StoreUnavailableError, match="Storage full"):
            await history.history.append("c1", "user", "said after the disk filled up")
        hits = (await engine.search(SearchRequest("before the disk filled up"))).results
        assert [h.content for h in hits] == ["Stored before the disk filled up"]
        assert [t.text for t in (await history.history.get("c1")).turns] == ["said before the disk filled up"]
        filler.unlink()
        assert (await engine.store(StoreRequest("Stored after space was freed"))).status == "stored"
        assert (await history.history.append("c1", "user", "said after space was freed")).status == "appended"
        assert (await engine.stats()).total_memories == 2
    finally:
        engine.close()


@pytest.mark.slow
async def test_a_write_bigger_than_the_free_space_is_refused_whole(settings: Settings, small_disk: Path) -> None:
    engine = await engine_with(settings, chromadb_path=small_disk / "data", min_free_mb=1)
    try:
        await engine.store(StoreRequest("A small memory that fits"))
        huge = [{"content": f"bulk item {i} " + "words " * 8000} for i in range(10)]  # 480 KB of text, ~2 MB on disk
        with pytest.raises(StoreUnavailableError, match="Storage full"):
            await engine.store_many(huge)
        assert (await engine.stats()).total_memories == 1  # all or nothing
        assert (await engine.store(StoreRequest("Another small memory"))).status == "stored"
    finally:
        engine.close()


@pytest.mark.slow
async def test_read_only_storage_fails_clearly_and_reads_keep_working(settings: Settings, small_disk: Path) -> None:
    data = small_disk / "data"
    writer = (
        "import asyncio, sys\n"
        "from pathlib import Path\n"
        "from symbiote.config import Settings\n"
        "from symbiote.memory.requests import StoreRequest\n"
        "from symbiote.runtime import build_runtime\n"
        "engine = build_runtime(Settings(chromadb_path=Path(sys.argv[1]), model_dir=Path(sys.argv[2]), min_free_mb=0)).engine\n"
        "asyncio.run(engine.store(StoreRequest('Stored while writable')))\n"
        "engine.close()\n"
    )
    # Another process writes and exits, so nothing holds the files open when the disk turns read-only.
    subprocess.run([sys.executable, "-c", writer, str(data), str(settings.model_dir)], check=True, capture_output=True)
    remount = subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], capture_output=True)
    if remount.returncode != 0:
        pytest.skip(f"cannot remount read-only here: {remount.stderr.decode().strip()}")
    engine = await engine_with(settings, chromadb_path=data, min_free_mb=0)
    try:
        with pytest.raises(StoreUnavailableError, match="(?i)read-only|not writable"):
            await engine.store(StoreRequest("Cannot be stored"))
    finally:
        engine.close()
        subprocess.run(["mount", "-o", "remount,rw", str(small_disk)], capture_output=True)


async def test_transient_lock_is_retried(engine: MemoryEngine, settings: Settings) -> None:
    await engine.store(StoreRequest("warm the store up"))
    # another process holding the write lock (the store runs in its own process, so this is one)
    lock = sqlite3.connect(settings.chromadb_path / "chroma.sqlite3", timeout=0, check_same_thread=False)
    lock.execute("BEGIN EXCLUSIVE")
    release = threading.Timer(0.3, lock.rollback)
    release.start()
    try:
        stored = await engine.store(StoreRequest("written once the lock is released"))
    finally:
        release.join()
        lock.close()
    assert (await engine.get(stored.memory_id)).content == "written once the lock is released"


@pytest.mark.slow
async def test_damaged_store_is_set_aside_and_reported_until_reset(settings: Settings) -> None:
    data = settings.chromadb_path
    data.mkdir(parents=True)
    garbage = os.urandom(16384)
    (data / "chroma.sqlite3").write_bytes(garbage)
    engine = await engine_with(settings)
    try:
        with pytest.raises(StoreUnavailableError, match="damaged") as caught:
            await engine.store(StoreRequest("hello"))
        assert "symbiote reset --confirm" in str(caught.value)
        with pytest.raises(StoreUnavailableError, match="damaged"):
            await engine.search(SearchRequest("hello"))  # stays unavailable, never "repaired" by itself
        assert engine.status()["store"] == "unavailable"
        backups = sorted(data.parent.glob(f"{data.name}.damaged-*"))
        assert len(backups) == 1 and (backups[0] / "chroma.sqlite3").read_bytes() == garbage
        assert (data / "chroma.sqlite3").read_bytes() == garbage  # the original is untouched
    finally:
        engine.close()
    moved = reset_store(data)
    assert moved is not None and (moved / "chroma.sqlite3").read_bytes() == garbage
    fresh = await engine_with(settings)
    try:
        assert (await fresh.store(StoreRequest("a fresh start"))).status == "stored"
    finally:
        fresh.close()


def test_disk_reserve_is_configured_in_megabytes() -> None:
    assert Settings.from_env({}).min_free_mb == 50
    assert Settings.from_env({"SYMBIOTE_MIN_FREE_MB": "0"}).min_free_mb == 0
    with pytest.raises(Exception, match="SYMBIOTE_MIN_FREE_MB"):
        Settings.from_env({"SYMBIOTE_MIN_FREE_MB": "lots"})
