"""The memory engine on the real model and a real embedded Chroma, without MCP or HTTP."""

from __future__ import annotations

import asyncio
import dataclasses
import os
from pathlib import Path

import chromadb
import pytest
from chromadb.config import Settings as ChromaSettings

from symbiote.config import Settings
from symbiote.errors import InvalidInputError, MemoryNotFoundError, StoreUnavailableError
from symbiote.memory.engine import MemoryEngine
from symbiote.memory.ids import IdGenerator, is_memory_id
from symbiote.memory.requests import SearchRequest, StoreRequest
from symbiote.storage.chroma.embedded import EmbeddedChroma
from symbiote.storage.chroma.store import MEMORY_COLLECTION
from tests.conftest import make_runtime


async def test_store_and_find_by_meaning(engine: MemoryEngine) -> None:
    stored = await engine.store(StoreRequest("I love building web apps with React", ["frontend", "preferences"]))
    await engine.store(StoreRequest("My sister lives in Lisbon and works as an architect"))
    found = await engine.search(SearchRequest("frontend development preferences"))
    assert [hit.memory_id for hit in found.results][:1] == [stored.memory_id]
    top = found.results[0]
    assert 30 <= top.relevance_score <= 100
    assert top.tags == ["frontend", "preferences"]
    assert top.content == "I love building web apps with React"


async def test_get_returns_tags_and_timestamp(engine: MemoryEngine) -> None:
    stored = await engine.store(StoreRequest("  Prefers tabs over spaces  ", ["editor", "Editor", " style "]))
    memory = await engine.get(stored.memory_id)
    assert memory.content == "Prefers tabs over spaces"
    assert memory.tags == ["editor", "style"]  # trimmed, duplicates (any case) dropped
    assert memory.timestamp == stored.timestamp and memory.timestamp.endswith("Z")


async def test_empty_store_search_is_an_empty_list(engine: MemoryEngine) -> None:
    result = await engine.search(SearchRequest("anything at all"))
    assert result.results == [] and result.count == 0


async def test_unrelated_query_gets_no_answer(engine: MemoryEngine) -> None:
    """The only memory may be shown as context (a chance, honest in a store of one), never as an answer."""
    await engine.store(StoreRequest("I love building web apps with React"))
    for query in ("recipe for sourdough bread starter", "what's my blood type?"):
        result = await engine.search(SearchRequest(query))
        assert all(hit.match == "context" for hit in result.results + result.below_cutoff)


@pytest.mark.parametrize(
    ("content", "tags", "message"),
    [
        ("", None, "content is empty"),
        ("   \n\t", None, "content is empty"),
        (42, None, "content must be text"),
        ("ok", [f"t{i}" for i in range(11)], "at most 10"),
        ("ok", ["x" * 51], "limit is 50"),
        ("ok", ["fine", "  "], "tag 2 is empty"),
        ("ok", "not-a-list", "must be a list"),
    ],
)
async def test_store_rejects_bad_input(engine: MemoryEngine, content: object, tags: object, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        await engine.store(StoreRequest(content, tags))


@pytest.mark.parametrize(("query", "limit"), [("", 5), ("  ", 5), ("ok", 0), ("ok", 21), ("ok", True), ("ok", "5")])
async def test_search_rejects_bad_input(engine: MemoryEngine, query: str, limit: object) -> None:
    with pytest.raises(InvalidInputError):
        await engine.search(SearchRequest(query, limit))


async def test_ten_tags_of_fifty_characters_are_accepted(engine: MemoryEngine) -> None:
    tags = [f"{i}" + "x" * 49 for i in range(10)]
    stored = await engine.store(StoreRequest("boundary case", tags))
    assert (await engine.get(stored.memory_id)).tags == tags


async def test_limit_caps_results_best_first(engine: MemoryEngine) -> None:
    for text in ["Uses React for the frontend", "Writes React components in TypeScript", "Likes React hooks"]:
        await engine.store(StoreRequest(text))
    result = await engine.search(SearchRequest("React frontend work", limit=2, min_relevance=0))
    assert len(result.results) == 2
    scores = [hit.relevance_score for hit in result.results]
    assert scores == sorted(scores, reverse=True)


async def test_delete_removes_it_and_missing_ids_are_reported(engine: MemoryEngine) -> None:
    stored = await engine.store(StoreRequest("temporary note about the dentist appointment"))
    deleted = await engine.delete(stored.memory_id)
    assert deleted.deleted
    with pytest.raises(MemoryNotFoundError, match="search_memory"):
        await engine.get(stored.memory_id)
    with pytest.raises(MemoryNotFoundError):
        await engine.delete(stored.memory_id)
    assert (await engine.search(SearchRequest("dentist appointment"))).results == []
    with pytest.raises(InvalidInputError, match="not a memory id"):
        await engine.get("12345")


async def test_list_pages_newest_first(engine: MemoryEngine) -> None:
    ids = [(await engine.store(StoreRequest(f"note number {i}"))).memory_id for i in range(7)]
    first = await engine.list_memories(limit=3)
    assert [m.memory_id for m in first.memories] == ids[::-1][:3]
    assert first.next_before == ids[4]
    second = await engine.list_memories(limit=3, before=first.next_before)
    assert [m.memory_id for m in second.memories] == ids[::-1][3:6]
    last = await engine.list_memories(limit=3, before=second.next_before)
    assert [m.memory_id for m in last.memories] == [ids[0]] and last.next_before is None
    with pytest.raises(InvalidInputError, match="ISO-8601"):
        await engine.list_memories(before="last tuesday")


async def test_long_content_is_stored_whole_and_found_by_its_last_paragraph(engine: MemoryEngine) -> None:
    filler = " ".join(
        f"Meeting notes item {i}: we reviewed the budget spreadsheet and agreed on follow-ups." for i in range(60)
    )
    ending = "Finally, the user's childhood dog was a golden retriever named Biscuit."
    content = f"{filler}\n\n{ending}"
    stored = await engine.store(StoreRequest(content))
    await engine.store(StoreRequest("The user's cat is called Miso"))
    assert (await engine.get(stored.memory_id)).content == content
    await engine.passages_indexed()  # the paragraphs are indexed right after the store
    found = await engine.search(SearchRequest("what was the name of my dog when I was a kid?"))
    assert found.results and found.results[0].memory_id == stored.memory_id
    assert [hit.memory_id for hit in found.results].count(stored.memory_id) == 1


async def test_stats_count_tags_and_latency(engine: MemoryEngine) -> None:
    await engine.store(StoreRequest("one", ["a", "b"]))
    await engine.store(StoreRequest("two", ["a"]))
    await engine.search(SearchRequest("one"))
    stats = await engine.stats()
    assert stats.total_memories == 2
    assert stats.top_tags == {"a": 2, "b": 1}
    assert stats.storage_mb > 0 and stats.embedding_dimension == 384
    assert stats.avg_store_ms is not None and stats.avg_search_ms is not None


async def test_concurrent_stores_are_all_kept(engine: MemoryEngine) -> None:
    results = await asyncio.gather(*(engine.store(StoreRequest(f"parallel fact {i}")) for i in range(40)))
    ids = {r.memory_id for r in results}
    assert len(ids) == 40
    assert (await engine.stats()).total_memories == 40


def test_ids_are_unique_sortable_and_well_formed() -> None:
    generator = IdGenerator()
    ids = [generator.new() for _ in range(5000)]
    assert len(set(ids)) == 5000
    assert all(is_memory_id(i) for i in ids)
    assert [i[:20] for i in ids] == sorted(i[:20] for i in ids)  # creation order = string order


@pytest.mark.slow
async def test_data_from_another_model_is_refused(settings: Settings) -> None:
    client = chromadb.PersistentClient(
        path=str(settings.chromadb_path), settings=ChromaSettings(anonymized_telemetry=False, allow_reset=False)
    )
    client.create_collection(
        MEMORY_COLLECTION,
        metadata={"embedding_model": "text-embedding-3-small", "embedding_dim": 1536},
        configuration={"hnsw": {"space": "cosine"}},
    )
    del client
    before = set(EmbeddedChroma._cores)
    runtime = make_runtime(settings)
    try:
        with pytest.raises(StoreUnavailableError, match="text-embedding-3-small"):
            await runtime.engine.store(StoreRequest("hello"))
        assert runtime.engine.status()["store"] == "unavailable"
        assert set(EmbeddedChroma._cores) == before  # the refused store is not left open in this process
    finally:
        runtime.close()


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
async def test_unwritable_path_is_reported_then_recovers(tmp_path: Path, settings: Settings) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    runtime = make_runtime(Settings(chromadb_path=locked / "data", model_dir=settings.model_dir))
    try:
        with pytest.raises(StoreUnavailableError, match="CHROMADB_PATH"):
            await runtime.engine.store(StoreRequest("hello"))
        locked.chmod(0o700)
        assert (await runtime.engine.store(StoreRequest("hello"))).memory_id
    finally:
        runtime.close()


async def test_warm_up_creates_the_store_so_the_first_store_does_not_wait(tmp_path: Path, settings: Settings) -> None:
    fresh = dataclasses.replace(settings, chromadb_path=tmp_path / "new" / "data")
    runtime = make_runtime(fresh)
    try:
        assert runtime.engine.status()["store"] == "not_opened" and await runtime.engine.count() is None
        await runtime.engine.warm_up()
        assert (fresh.chromadb_path / "chroma.sqlite3").is_file() and runtime.engine.status()["store"] == "ready"
        assert await runtime.engine.count() == 0
    finally:
        runtime.close()
    again = make_runtime(fresh)
    try:
        await again.engine.warm_up()
        assert again.engine.status()["store"] == "ready"  # it exists now: opened at start
    finally:
        again.close()


async def test_path_that_is_a_file_is_reported_then_recovers(tmp_path: Path, settings: Settings) -> None:
    blocker = tmp_path / "data"
    blocker.write_text("not a directory")
    runtime = make_runtime(Settings(chromadb_path=blocker, model_dir=settings.model_dir))
    try:
        with pytest.raises(StoreUnavailableError, match="CHROMADB_PATH"):
            await runtime.engine.search(SearchRequest("hello"))
        status = runtime.engine.status()
        assert status["store"] == "unavailable" and "not writable" in status["error"]
        blocker.unlink()
        assert (await runtime.engine.search(SearchRequest("hello"))).results == []
        assert runtime.engine.status()["store"] == "ready"
    finally:
        runtime.close()
