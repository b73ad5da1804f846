"""Every write to Chroma within its maximum batch (5,461 records in the embedded store), asked of
Chroma itself: past it, one call was refused whole ("Batch size of 9108 is greater than max batch
size of 5461"), so the passages of 41 long memories and the links of 10,000 deleted ones were never
written however often they were tried (issue 39). Real Chroma, past its real maximum."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from symbiote.embedding import MODEL_DIMENSION, MODEL_NAME
from symbiote.storage.base import StoredMemory
from symbiote.storage.chroma.batches import READ_IDS, max_batch_size
from symbiote.storage.chroma.opening import open_embedded_store
from symbiote.storage.chroma.store import ChromaMemoryStore

PAST_MAXIMUM = 5_600  # more records than the embedded Chroma takes in one call


def _memory(i: int, text: str) -> StoredMemory:
    return StoredMemory(f"mem_{1_000_000 + i}", text, "2026-11-27T00:00:00Z", 1_000_000 + i, (), content_hash=f"h{i}")


def _unit(rows: int, seed: int) -> np.ndarray:
    """Random unit vectors in 8 of the 384 dimensions: Chroma indexes them faster than vectors spread
    over all of them, and what they say is not what is under test."""
    rng = np.random.default_rng(seed)
    vectors = (rng.standard_normal((rows, 8)) @ rng.standard_normal((8, MODEL_DIMENSION))).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


@pytest.fixture(params=[False, True], ids=["chroma", "vectors-in-memory"])
def store(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[ChromaMemoryStore]:
    """Closed after its test: an open store keeps its Chroma core (thousands of vectors) in this process."""
    opened = open_embedded_store(tmp_path / "data", MODEL_NAME, MODEL_DIMENSION, vectors_in_memory=request.param)
    yield opened
    opened.close()


def test_chroma_says_its_maximum(store: ChromaMemoryStore) -> None:
    assert max_batch_size(store._client) == 5_461 < PAST_MAXIMUM  # the cases below are really past it


@pytest.mark.slow
def test_one_memorys_passages_past_the_maximum_are_indexed(store: ChromaMemoryStore) -> None:
    windows = ["A long note.", *(f"Paragraph {i}." for i in range(PAST_MAXIMUM))]
    memory = _memory(0, windows[0])
    store.add_many([(memory, _unit(1, 0), windows)])  # one vector: its passages are queued
    assert store.counts()["passages_queued"] == 1
    assert store.add_passages([(memory.memory_id, _unit(PAST_MAXIMUM, 1), windows)]) == 1
    assert store.counts() == {
        "memories": 1,
        "passages": PAST_MAXIMUM,
        "keyword_index": 1,
        "passages_queued": 0,
        "set_aside": 0,
    }
    assert store.delete_many([memory.memory_id]) == [memory.memory_id]
    assert store.counts()["passages"] == 0


@pytest.mark.slow
@pytest.mark.parametrize("store", [True], ids=["vectors-in-memory"], indirect=True)
def test_links_of_more_memories_than_the_maximum_are_set_and_moved_to_the_trash(store: ChromaMemoryStore) -> None:
    memories = [_memory(i, f"note {i}") for i in range(PAST_MAXIMUM)]
    vectors = _unit(PAST_MAXIMUM, 2)
    store.add_many([(m, vectors[i : i + 1], [m.content]) for i, m in enumerate(memories)])
    linked = [
        StoredMemory(**{**m.__dict__, "superseded_by": memories[i ^ 1].memory_id, "link_kind": "duplicate"})
        for i, m in enumerate(memories)
    ]
    store.set_links(linked)
    got = store.get([m.memory_id for m in memories])
    assert len(got) == PAST_MAXIMUM and all(m.superseded_by for m in got.values())
    moved = store.trash([m.memory_id for m in memories], "owner", 2_000_000)
    assert len(moved) == PAST_MAXIMUM and store.count() == 0
    assert len(store.restore(moved)) == PAST_MAXIMUM and store.count() == PAST_MAXIMUM


def test_a_read_by_more_ids_than_chroma_takes_at_once_finds_every_stored_one(tmp_path: Path) -> None:
    store = open_embedded_store(tmp_path / "data", MODEL_NAME, MODEL_DIMENSION)
    try:
        memories = [_memory(i, f"Batch read note {i}: the spare key is in drawer {i}.") for i in range(3)]
        store.add_many([(m, _unit(1, i), [m.content]) for i, m in enumerate(memories)])
        # the stored ids spread over the pages of a read by 10,001 ids (two pages of READ_IDS at most)
        asked = [f"mem_{9_000_000 + i}" for i in range(READ_IDS + 1)]
        asked[0], asked[5_000], asked[-1] = (m.memory_id for m in memories)
        got = store._memories.get(ids=asked, include=["documents", "metadatas"])
        assert got["ids"] == [m.memory_id for m in memories]
        assert got["documents"] == [m.content for m in memories] and got["embeddings"] is None
        assert len(got["metadatas"]) == 3
        assert store.get(asked).keys() == {m.memory_id for m in memories}
    finally:
        store.close()
