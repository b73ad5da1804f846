"""The same storage suite on both stores: embedded Chroma (CHROMADB_PATH) and a real Chroma server.

Each test runs twice (`backend` = embedded | server) on an empty store of its own: a fresh
directory, or a fresh database on the session's `chroma run` server. Vectors come from the
real model; nothing is mocked.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest

from symbiote.config import Settings
from symbiote.embedding.model import MODEL_DIMENSION, MODEL_NAME, Embedder
from symbiote.errors import InvalidInputError, MemoryNotFoundError, StoreUnavailableError
from symbiote.memory import SearchRequest, StoreRequest
from symbiote.memory import created_us as id_micros
from symbiote.memory.history import parse_ts
from symbiote.memory.ids import IdGenerator
from symbiote.storage.base import StoredMemory, content_hash
from symbiote.storage.chroma.client import ChromaClients, ChromaServer
from symbiote.storage.chroma.history_store import ChromaHistoryStore
from symbiote.storage.chroma.opening import open_embedded_store, open_server_store
from tests.chroma_server import Backend, backend, chroma_server  # noqa: F401  (fixtures)
from tests.conftest import make_runtime

IDS = IdGenerator()


def iso_utc(micros: int) -> str:
    return datetime.fromtimestamp(micros / 1e6, tz=UTC).isoformat().replace("+00:00", "Z")


class Opened:
    """A store opened the way the runtime opens it for these settings, plus helpers to fill it."""

    def __init__(self, settings: Settings, model: Embedder) -> None:
        self.settings = settings
        self.model = model
        self.store = open_store(settings)

    def add(self, content: str, tags: tuple[str, ...] = (), created_us: int | None = None) -> StoredMemory:
        memory_id = IDS.new()
        micros = created_us if created_us is not None else id_micros(memory_id)
        memory = StoredMemory(memory_id, content, iso_utc(micros), micros, tags, content_hash(content))
        windows = self.model.windows(content)
        self.store.add(memory, self.model.embed(windows), windows)
        return memory

    def vector(self, text: str) -> np.ndarray:
        return self.model.embed([text])[0]


OPENED: list[Any] = []  # every store and client a test opened, closed after it (`close_what_tests_opened`)


@pytest.fixture(autouse=True)
def close_what_tests_opened() -> Iterator[None]:
    yield
    while OPENED:
        OPENED.pop().close()


def open_store(settings: Settings, model_name: str = MODEL_NAME, dimension: int = MODEL_DIMENSION) -> Any:
    server = ChromaServer.from_settings(settings)
    if server is not None:
        store = open_server_store(server, settings.chromadb_path, model_name, dimension)
    else:
        store = open_embedded_store(settings.chromadb_path, model_name, dimension)
    OPENED.append(store)
    return store


@pytest.fixture
def opened(backend: Backend, model: Embedder) -> Iterator[Opened]:
    yield Opened(backend.settings(), model)


# -- the memory store ---------------------------------------------------------------------------


def test_add_get_count_round_trip(opened: Opened) -> None:
    stored = opened.add("Prefers tabs over spaces", ("editor", "style"))
    assert opened.store.count() == 1
    found = opened.store.get([stored.memory_id, "mem_00000000000000000001"])
    assert list(found) == [stored.memory_id]
    got = found[stored.memory_id]
    assert (got.content, got.tags, got.created_us, got.content_hash) == (
        "Prefers tabs over spaces",
        ("editor", "style"),
        stored.created_us,
        stored.content_hash,
    )
    assert opened.store.find_content(content_hash("  prefers TABS over spaces ")).memory_id == stored.memory_id
    assert opened.store.find_content(content_hash("something else")) is None


def test_nearest_by_meaning_and_best_passage(opened: Opened) -> None:
    react = opened.add("I love building web apps with React")
    mixed = opened.add("We moved to Porto in 2021. My sister is an architect. The car is blue.")
    opened.add("Allergic to peanuts")
    top = opened.store.nearest(opened.vector("frontend development preferences"), 3)
    assert top[0].memory_id == react.memory_id
    sister = opened.store.nearest(opened.vector("what does my sister do for a living?"), 3)
    assert sister[0].memory_id == mixed.memory_id and sister[0].similarity > 0.5
    assert len({m.memory_id for m in sister}) == len(sister)  # one entry per memory, not per passage


def test_keyword_finds_names(opened: Opened) -> None:
    caroline = opened.add("Caroline went to the adoption agency on Tuesday")
    opened.add("The weather was lovely all week")
    assert [m.memory_id for m in opened.store.keyword("what did Caroline say?", 5)][:1] == [caroline.memory_id]


def test_delete_removes_vectors_passages_and_keywords(opened: Opened) -> None:
    gone = opened.add("The dentist appointment is on Friday. Bring the insurance card.")
    kept = opened.add("The user's cat is called Miso")
    assert opened.store.delete(gone.memory_id) is True
    assert opened.store.delete(gone.memory_id) is False
    assert opened.store.get([gone.memory_id]) == {}
    assert opened.store.count() == 1
    assert gone.memory_id not in [m.memory_id for m in opened.store.nearest(opened.vector("insurance card"), 5)]
    assert gone.memory_id not in [m.memory_id for m in opened.store.keyword("dentist insurance", 5)]
    assert [m.memory_id for m in opened.store.keyword("Miso", 5)][:1] == [kept.memory_id]


def test_page_newest_first_and_scan(opened: Opened) -> None:
    memories = [opened.add(f"note number {i}", (f"t{i % 2}",)) for i in range(5)]
    first = opened.store.page(2, None)
    assert [m.memory_id for m in first] == [memories[4].memory_id, memories[3].memory_id]
    older = opened.store.page(10, first[-1].created_us)
    assert [m.memory_id for m in older] == [m.memory_id for m in memories[2::-1]]
    heads = opened.store.scan()
    assert sorted(h.memory_id for h in heads) == sorted(m.memory_id for m in memories)
    assert {h.tags for h in heads} == {("t0",), ("t1",)}


def test_reopened_store_sees_everything_and_rebuilds_keywords(backend: Backend, model: Embedder) -> None:
    first = Opened(backend.settings(), model)
    stored = first.add("Caroline's dog is named Biscuit")
    settings = first.settings
    if backend.kind == "server":
        # Another instance: same database, its own local directory with no keyword index yet.
        settings = replace(settings, chromadb_path=backend.root / "another-instance")
    again = open_store(settings)
    assert again.count() == 1
    assert [m.memory_id for m in again.keyword("Biscuit", 5)][:1] == [stored.memory_id]


def test_data_of_another_model_is_refused(opened: Opened) -> None:
    opened.add("hello")
    with pytest.raises(StoreUnavailableError, match="all-MiniLM-L6-v2"):
        open_store(opened.settings, model_name="text-embedding-3-small", dimension=1536)


def test_size_is_reported_for_the_embedded_store_only(opened: Opened, backend: Backend) -> None:
    opened.add("something to take up space")
    size = opened.store.size_bytes()
    assert size > 0 if backend.kind == "embedded" else size == 0  # a server's disk is not ours to measure


# -- the conversation history store ---------------------------------------------------------------


def history_store(settings: Settings) -> ChromaHistoryStore:
    clients = ChromaClients(ChromaServer.from_settings(settings), settings.chromadb_path)
    OPENED.append(clients)
    return ChromaHistoryStore(clients.get(), MODEL_NAME, MODEL_DIMENSION)


def test_history_store_appends_numbers_and_reads_in_order(opened: Opened) -> None:
    turns = history_store(opened.settings)
    stamp, micros = parse_ts(None)
    for i, text in enumerate(["hello", "hi! how can we help?", "tell me about Lisbon"]):
        turn, written = turns.add(
            "c1", "user" if i % 2 == 0 else "assistant", text, stamp, micros, opened.vector(text), None
        )
        assert written and turn.turn_index == i
    last, total = turns.get_turns("c1", 2)
    assert total == 3 and [t.text for t in last] == ["hi! how can we help?", "tell me about Lisbon"]
    assert turns.get_turns("unknown", 5) == ([], 0)
    same, written = turns.add("c1", "user", "hello", stamp, micros, opened.vector("hello"), 0)
    assert not written and same.turn_index == 0
    with pytest.raises(InvalidInputError, match="already exists"):
        turns.add("c1", "user", "something else", stamp, micros, opened.vector("x"), 0)
    hits = turns.search(opened.vector("the capital of Portugal"), 1, "c1")
    assert hits[0][0].text == "tell me about Lisbon"


def test_history_lives_beside_the_memories_not_among_them(opened: Opened) -> None:
    turns = history_store(opened.settings)
    stamp, micros = parse_ts(None)
    text = "My passport number is somewhere in the drawer"
    turns.add("c2", "user", text, stamp, micros, opened.vector(text), None)
    assert opened.store.count() == 0
    assert opened.store.nearest(opened.vector(text), 5) == []
    assert opened.store.keyword("passport drawer", 5) == []


# -- the whole engine on each backend (the runtime's own wiring) -----------------------------------


async def test_engine_and_history_work_the_same_on_both_backends(backend: Backend) -> None:
    runtime = make_runtime(backend.settings())
    engine = runtime.engine
    try:
        stored = await engine.store(StoreRequest("I love building web apps with React", ["frontend"]))
        sister = await engine.store(StoreRequest("My sister lives in Lisbon and works as an architect"))
        found = await engine.search(SearchRequest("Which frontend library do I like for web apps?"))
        assert found.results[0].memory_id == stored.memory_id
        assert (await engine.get(stored.memory_id)).tags == ["frontend"]
        assert [m.memory_id for m in (await engine.list_memories(limit=1)).memories] == [sister.memory_id]
        assert (await engine.stats()).total_memories == 2
        await engine.delete(stored.memory_id)
        with pytest.raises(MemoryNotFoundError):
            await engine.get(stored.memory_id)
        assert runtime.history is not None
        await runtime.history.history.append("conv", "user", "I love building web apps with React")
        assert [t.text for t in (await runtime.history.history.get("conv")).turns] == [
            "I love building web apps with React"
        ]
        await runtime.history.history.append("conv", "assistant", "Noted: the user's bicycle is a red Brompton")
        found = await engine.search(SearchRequest("the user's red Brompton bicycle"))  # history is not memory
        assert all("Brompton" not in hit.content and hit.match == "context" for hit in found.results)
        assert engine.status()["store"] == "ready"
    finally:
        engine.close()
