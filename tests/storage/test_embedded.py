"""The embedded store's client over Chroma's Rust core answers as `chromadb.PersistentClient` does.

Each test runs the same calls through both, on two directories (and on one directory in turn, for
stores that Chroma's own client made), and compares what comes back.
"""

from __future__ import annotations

import gc
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from symbiote.storage.chroma.client import import_chromadb
from symbiote.storage.chroma.embedded import COSINE_CONFIGURATION, EmbeddedChroma

COSINE = {"hnsw": {"space": "cosine"}}
IDENTITY = {"embedding_model": "test-model", "embedding_dim": 8}


def _vectors(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).random((n, 8), dtype=np.float32)


@pytest.fixture
def chroma(tmp_path: Path) -> Iterator[Any]:
    """Chroma's own client on a directory of its own, closed after the test."""
    client = import_chromadb().PersistentClient(path=str(tmp_path / "chroma"))
    yield client
    client.close()


@pytest.fixture
def ours(tmp_path: Path) -> Iterator[EmbeddedChroma]:
    client = EmbeddedChroma.open(tmp_path / "ours")
    yield client
    client.close()


def _plain(result: dict[str, Any]) -> dict[str, Any]:
    """A result with its arrays as lists, for comparing."""
    return {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in result.items()}


def _same_calls(collection: Any) -> list[Any]:
    """Writes and reads of every kind the stores make; what each read gave."""
    vectors = _vectors(6, 1)
    ids = [f"m{i}" for i in range(6)]
    metas = [{"kind": "note" if i % 2 else "fact", "n": i, "ok": bool(i % 3), "tags": ["a", "b"]} for i in range(6)]
    collection.add(ids=ids[:4], embeddings=vectors[:4], documents=[f"text {i}" for i in range(4)], metadatas=metas[:4])
    collection.upsert(
        ids=ids[3:],
        embeddings=[v.tolist() for v in vectors[3:]],
        documents=["three", "four", "five"],
        metadatas=metas[3:],
    )
    collection.update(ids=["m1"], metadatas=[{"kind": "changed", "n": 10}])
    collection.update(ids=["m2"], embeddings=[vectors[5]], documents=["moved"])
    collection.delete(ids=["m0"])
    query = _vectors(1, 2)[0]
    seen: list[Any] = [collection.count()]
    for include in ([], ["metadatas"], ["documents", "metadatas"], ["embeddings", "documents", "metadatas"]):
        seen.append(_plain(collection.get(include=include)))
    seen.append(_plain(collection.get(ids=["m3", "m1", "nope"], include=["metadatas"])))
    seen.append(_plain(collection.get(where={"kind": "note"}, include=["documents"], limit=2, offset=1)))
    seen.append(_plain(collection.get(where={"$and": [{"n": {"$gte": 2}}, {"ok": True}]}, include=[])))
    seen.append(_plain(collection.get(where={"kind": {"$in": ["fact", "changed"]}}, include=["metadatas"])))
    found = collection.query(query_embeddings=[query.tolist()], n_results=3, include=["distances", "documents"])
    seen.append({k: v for k, v in found.items() if k != "distances"})
    seen.append(np.round(found["distances"], 5).tolist())
    found = collection.query(
        query_embeddings=[query.tolist()], n_results=2, where={"kind": "note"}, include=["distances", "metadatas"]
    )
    seen.append({k: v for k, v in found.items() if k != "distances"})
    collection.delete(ids=["m1", "m2", "m3", "m4", "m5"])
    seen.append(collection.count())
    return seen


def test_the_same_calls_give_the_same_answers(chroma: Any, ours: EmbeddedChroma) -> None:
    theirs = chroma.get_or_create_collection(
        "memories", metadata=IDENTITY, configuration=COSINE, embedding_function=None
    )
    mine = ours.get_or_create_collection("memories", metadata=IDENTITY, configuration=COSINE, embedding_function=None)
    assert (mine.name, mine.metadata, mine.configuration["hnsw"]) == (
        theirs.name,
        theirs.metadata,
        theirs.configuration["hnsw"],
    )
    assert _same_calls(mine) == _same_calls(theirs)
    assert ours.get_max_batch_size() == chroma.get_max_batch_size()
    assert [c.name for c in ours.list_collections()] == [c.name for c in chroma.list_collections()]
    mine.modify(metadata={**IDENTITY, "holds": "more"})
    theirs.modify(metadata={**IDENTITY, "holds": "more"})
    assert ours.get_collection("memories").metadata == chroma.get_collection("memories").metadata


def test_the_configuration_is_the_one_chromas_client_writes() -> None:
    import_chromadb()
    from chromadb.api.collection_configuration import create_collection_configuration_to_json_str

    assert create_collection_configuration_to_json_str(COSINE, IDENTITY) == COSINE_CONFIGURATION  # type: ignore[arg-type]


@pytest.mark.slow
def test_a_store_chromas_client_made_is_read_and_written_alike(tmp_path: Path) -> None:
    """Every data directory before this client was made by Chroma's own: nothing in it may change meaning."""
    path = tmp_path / "store"
    # Chroma's client in a process of its own: it keeps its system for the process's life.
    made = subprocess.run(
        [sys.executable, "-c", _MAKE % str(path)], capture_output=True, text=True, timeout=120, check=False
    )
    assert made.returncode == 0, made.stderr
    client = EmbeddedChroma.open(path)
    try:
        collection = client.get_or_create_collection("memories", metadata=IDENTITY, configuration=COSINE)
        got = collection.get(include=["embeddings", "documents", "metadatas"])
        assert got["ids"] == ["a", "b"] and got["documents"] == ["one", "two"]
        assert got["metadatas"] == [{"n": 1}, {"n": 2}]
        assert np.allclose(got["embeddings"], _vectors(2, 7))
        assert collection.query(query_embeddings=[_vectors(2, 7)[1]], n_results=1)["ids"] == [["b"]]
        collection.add(ids=["c"], embeddings=_vectors(1, 8), documents=["three"], metadatas=[{"n": 3}])
    finally:
        client.close()
    read = subprocess.run(
        [sys.executable, "-c", _READ % str(path)], capture_output=True, text=True, timeout=120, check=False
    )
    assert read.returncode == 0, read.stderr
    assert read.stdout.split() == ["a", "b", "c", "three"]


_MAKE = """
import numpy as np
from symbiote.storage.chroma.client import import_chromadb
client = import_chromadb().PersistentClient(path=%r)
c = client.get_or_create_collection("memories", metadata={"embedding_model": "test-model", "embedding_dim": 8},
                                    configuration={"hnsw": {"space": "cosine"}}, embedding_function=None)
c.add(ids=["a", "b"], embeddings=np.random.default_rng(7).random((2, 8), dtype=np.float32),
      documents=["one", "two"], metadatas=[{"n": 1}, {"n": 2}])
"""
_READ = """
from symbiote.storage.chroma.client import import_chromadb
c = import_chromadb().PersistentClient(path=%r).get_collection("memories")
got = c.get(include=["documents"])
print(*got["ids"], got["documents"][-1])
"""


def test_bad_records_are_refused_with_chromas_errors(ours: EmbeddedChroma) -> None:
    """What the journal's replay catches (`additions.Additions.replay`): a ValueError or a TypeError."""
    collection = ours.get_or_create_collection("memories", metadata=IDENTITY, configuration=COSINE)
    vector = _vectors(1, 3)
    with pytest.raises(ValueError, match="non-empty dict"):
        collection.add(ids=["a"], embeddings=vector, metadatas=[{}])
    with pytest.raises(ValueError, match="metadata value"):
        collection.add(ids=["a"], embeddings=vector, metadatas=[{"k": {"nested": 1}}])
    with pytest.raises(ValueError, match="unique"):
        collection.add(ids=["a", "a"], embeddings=_vectors(2, 3))
    with pytest.raises(ValueError, match="Unequal lengths"):
        collection.upsert(ids=["a", "b"], embeddings=vector)
    with pytest.raises(ValueError, match="non-empty list"):
        collection.update(ids=[], documents=[])
    with pytest.raises(ValueError, match="non-empty list"):
        collection.delete(ids=[])
    with pytest.raises(TypeError, match="cannot be negative, or zero"):
        collection.query(query_embeddings=vector, n_results=0)
    assert collection.count() == 0
    collection.add(ids=["kept"], embeddings=vector)
    with pytest.raises(ValueError, match="exactly one operator"):
        collection.delete(where={})
    assert collection.count() == 1  # a refused delete deletes nothing


def test_clients_of_one_path_share_its_core_until_the_last_closes(tmp_path: Path) -> None:
    first = EmbeddedChroma.open(tmp_path / "store")
    second = EmbeddedChroma.open(tmp_path / "store")
    assert first.bindings is second.bindings
    written = first.get_or_create_collection("memories", metadata=IDENTITY, configuration=COSINE)
    written.add(ids=["a"], embeddings=_vectors(1, 4), documents=["one"])
    first.close()
    assert second.get_collection("memories").get(include=["documents"])["documents"] == ["one"]
    second.close()
    with pytest.raises(RuntimeError, match="closed"):
        second.get_collection("memories")
    gc.collect()
    again = EmbeddedChroma.open(tmp_path / "store")
    try:
        assert again.bindings is not None and again.get_collection("memories").count() == 1
    finally:
        again.close()


BAD_FILTERS: list[Any] = [
    {},
    {"$and": []},
    {"$or": []},
    {"$and": [{"kind": "note"}]},
    {"$and": {"kind": "note"}},
    {"$and": [{"kind": "note"}, {}]},
    {"kind": "note", "n": 1},
    {"kind": ["note"]},
    {"kind": None},
    {"$contains": "note"},
    {"n": {"$gt": "1"}},
    {"n": {"$in": "1"}},
    {"n": {"$in": []}},
    {"n": {"$in": [1, "1"]}},
    {"n": {"$gt": 1, "$lt": 3}},
    {"n": {"$like": 1}},
    {"n": {"$eq": None}},
    {"#document": {"$contains": 1}},
    {"tags": {"$contains": [1]}},
    {1: "note"},
    "kind",
]
GOOD_FILTERS: list[Any] = [
    {"kind": "note"},
    {"$and": [{"kind": "note"}, {"n": {"$gte": 1}}]},
    {"$or": [{"kind": "fact"}, {"n": {"$in": [1, 3]}}]},
    {"tags": {"$contains": "a"}},
    {"n": {"$ne": 2}},
]
BAD_METADATA: list[Any] = [[1, 2.5], [True, 1], [], [None], ["a", 1], [[1]]]


def _outcome(call: Any, **arguments: Any) -> Any:
    try:
        got = call(**arguments)
    except Exception as exc:  # noqa: BLE001 - compared: the same refusal from both clients
        return (
            type(exc).__name__,
            re.sub(r" in (get|add|delete)\.$", "", str(exc)),
        )  # where Chroma's client says the call
    return ("ok", _plain(got) if isinstance(got, dict) else got)


def test_filters_and_metadata_lists_are_refused_as_chromas_client_refuses_them(
    chroma: Any, ours: EmbeddedChroma
) -> None:
    """Issue 67 L9: `{"$and": []}` selected every record (a delete removed them all), `$and` of one
    clause and the list `[1, 2.5]` were taken; Chroma's client refuses each, and so does ours."""
    theirs = chroma.get_or_create_collection("memories", metadata=IDENTITY, configuration={"hnsw": {"space": "cosine"}})
    mine = ours.get_or_create_collection("memories", metadata=IDENTITY, configuration={"hnsw": {"space": "cosine"}})
    metas = [{"kind": "note" if i % 2 else "fact", "n": i, "tags": ["a", "b"]} for i in range(3)]
    for collection in (theirs, mine):
        collection.add(ids=["r0", "r1", "r2"], embeddings=_vectors(3, 4), documents=["a", "b", "c"], metadatas=metas)
    for where in [*BAD_FILTERS, *GOOD_FILTERS]:
        expected = _outcome(theirs.get, where=where, include=["metadatas"])
        assert _outcome(mine.get, where=where, include=["metadatas"]) == expected, where
        if where in BAD_FILTERS:
            assert expected[0] == "ValueError", where
            assert _outcome(mine.delete, where=where)[0] == "ValueError", where
    for value in BAD_METADATA:
        expected = _outcome(theirs.add, ids=["x"], embeddings=_vectors(1, 9), metadatas=[{"k": value}])
        assert expected[0] == "ValueError", value
        assert _outcome(mine.add, ids=["x"], embeddings=_vectors(1, 9), metadatas=[{"k": value}]) == expected
    assert mine.count() == theirs.count() == 3  # nothing refused was written or deleted
