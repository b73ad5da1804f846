"""Chroma's vector index files damaged by a full disk: found before Chroma reads them, set aside, and
made again from the stored texts; every memory is still found, and /health says what happened.

A real store of 1,010 memories (two sentences each, so both collections pass Chroma's thousand
records and have their index files written in full), the real model, the real engine."""

from __future__ import annotations

import json
import random
import shutil
import sqlite3
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from symbiote.config import Settings
from symbiote.embedding import MODEL_DIMENSION, MODEL_NAME
from symbiote.embedding.model import Embedder
from symbiote.http.health import health_report
from symbiote.memory import SearchRequest
from symbiote.storage.base import CHROMA_FILE
from symbiote.storage.chroma.embedded import EmbeddedChroma
from symbiote.storage.chroma.opening import open_embedded_store
from symbiote.storage.chroma.segment_files import INDEX_FILES, PICKLE, REBUILD_FILE, problem, set_aside_damaged
from tests.conftest import ServerProcess, Volume, make_runtime

MEMORIES = 1_010
SAMPLE = 40  # memories searched for after the rebuild (all of them: SAMPLE = MEMORIES)
INDEX_NAMES = (PICKLE, *INDEX_FILES)


WHO = "Anna Bruno Chiara Dmitri Esther Farid Greta Hiro Ines Jonas Kemal Lotte Mateo Nadia Otto Priya Quinn".split()
WHAT = (
    "bakes sourdough,repairs bicycles,grows tomatoes,plays the cello,collects stamps,climbs in the Alps,"
    "paints watercolours,keeps bees,sails a dinghy,brews cider,knits scarves,restores clocks,"
    "studies Japanese,runs marathons,carves spoons,photographs owls,builds radios,breeds goldfish,"
    "writes haiku,fences epee,rows on the river,roasts coffee,juggles clubs"
).split(",")
WHERE = "Lisbon Oslo Nairobi Lima Hanoi Quito Tbilisi Perth Dakar Riga Osaka Bergen Cusco Fez Graz Ghent Split Turku".split()


def _text(i: int) -> str:
    who, what, where = WHO[i % len(WHO)], WHAT[i % len(WHAT)], WHERE[i % len(WHERE)]
    return f"{who} {what} in {where} (note {i}). It started in the year {1900 + i}."


# A thousand memories embedded, and a rebuild of as many: the quick tier leaves the module out.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory, model_dir: Path) -> Path:
    data = tmp_path_factory.mktemp("segments") / "data"
    runtime = make_runtime(Settings(chromadb_path=data, model_dir=model_dir))  # its own process: closed, it is gone

    async def seed() -> None:
        for start in range(0, MEMORIES, 100):
            await runtime.engine.store_many([_text(i) for i in range(start, min(MEMORIES, start + 100))])
        await runtime.engine.passages_indexed()

    import asyncio

    try:
        asyncio.run(seed())
    finally:
        runtime.close()
    return data


def _segments(data: Path) -> dict[str, Path]:
    """Each collection's vector index directory."""
    with sqlite3.connect(data / CHROMA_FILE) as chroma:
        rows = chroma.execute(
            "SELECT s.id, c.name FROM segments s JOIN collections c ON s.collection = c.id WHERE s.scope = 'VECTOR'"
        ).fetchall()
    chroma.close()
    return {name: data / segment for segment, name in rows}


@pytest.fixture
def store(pristine: Path, tmp_path: Path) -> Iterator[Path]:
    data = tmp_path / "copy" / "data"
    shutil.copytree(pristine, data)
    yield data


def test_the_seeded_store_has_every_index_file_written(pristine: Path) -> None:
    for folder in _segments(pristine).values():
        assert all((folder / name).stat().st_size > 0 for name in INDEX_NAMES), folder
        assert problem(folder) is None


@pytest.mark.parametrize("name", INDEX_NAMES)
@pytest.mark.parametrize("damage", ["emptied", "cut in half", "zeroed"])
def test_every_index_file_emptied_cut_short_or_zeroed_is_found(store: Path, name: str, damage: str) -> None:
    for folder in _segments(store).values():
        file = folder / name
        whole = file.read_bytes()
        changed = {"emptied": b"", "cut in half": whole[: len(whole) // 2], "zeroed": bytes(len(whole))}[damage]
        file.write_bytes(changed)
        found = problem(folder)
        if name == "length.bin" and damage == "zeroed":
            assert found is None  # the vectors' lengths: Chroma loads and searches it as it is
        else:
            assert found is not None and name.split(".")[0] in found, found
        file.write_bytes(whole)


def test_the_check_leaves_chromas_files_alone_while_chroma_in_this_process_has_them_open(store: Path) -> None:
    """Another SQLite library opening Chroma's file while Chroma's connections in the same process have it
    open takes their POSIX locks and resets their shared WAL index: "database disk image is malformed"
    at the next open (2 of 1,018 tests on a CI run, each after a close and an open at once). A client let
    go closes its connections on Chroma's own threads, a moment later."""
    pickle = _segments(store)["venom_memories"] / PICKLE
    client = EmbeddedChroma.open(store)
    assert client.get_collection("venom_memories").count() == MEMORIES
    pickle.write_bytes(b"")
    EmbeddedChroma.forget(store)  # no core kept for the path; the client still holds Chroma's connections
    assert EmbeddedChroma.holds(store)
    assert set_aside_damaged(store) == [] and pickle.is_file()
    client.close()
    while EmbeddedChroma.holds(store):  # the connections close on Chroma's threads
        time.sleep(0.01)
    (entry,) = set_aside_damaged(store)
    assert entry["collection"] == "venom_memories" and "index_metadata.pickle" in entry["problem"]


async def test_an_emptied_index_is_set_aside_rebuilt_and_every_memory_found(
    store: Path, settings: Settings, model: Embedder, sampled: Callable[[int, int], Volume]
) -> None:
    """What a full disk left (issue 67, M4): the memories' `index_metadata.pickle` empty, and the
    passages' links cut short. Chroma 1.5.9 failed every open ("Error deserializing pickle file").
    Every memory is counted and has its vectors; 100 of them, drawn from the run's seed (all under
    --soak), are embedded again here and compared."""
    checked = sampled(MEMORIES, 100)
    segments = _segments(store)
    (segments["venom_memories"] / PICKLE).write_bytes(b"")
    links = segments["venom_memories_chunks"] / "link_lists.bin"
    links.write_bytes(links.read_bytes()[:100])
    runtime = make_runtime(replace(settings, chromadb_path=store, store_process=True))
    engine = runtime.engine
    try:
        await engine.warm_up()  # opens the store; its damaged index is set aside
        await engine.passages_indexed()  # the rebuild: every memory's text embedded again
        assert await engine.count() == MEMORIES
        every = await engine.bulk.ids_oldest_first()
        texts = {mid: memory.content for mid, memory in (await engine.bulk.fetch(every)).items()}
        stored = await engine.bulk.vectors(every)  # Chroma refuses this while any record lacks its vector
        assert len(stored) == MEMORIES
        ids = sorted(checked.rng.sample(every, checked.count), key=every.index)
        # 16 texts a run, as the engine embeds them: all 1,010 (--soak) in one run take 600 MB of activations
        fresh = [
            vector for at in range(0, len(ids), 16) for vector in model.embed([texts[m] for m in ids[at : at + 16]])
        ]
        for mid, vector in zip(ids, fresh):
            assert len(stored[mid]) == 3 and float(stored[mid][0] @ vector) > 0.999, (
                mid
            )  # the whole text's, then passages
        seed = random.randrange(1 << 30)
        print(f"searching {SAMPLE} of {MEMORIES} memories by meaning, seed {seed}")
        for i in random.Random(seed).sample(range(MEMORIES), SAMPLE):  # ranking aside: its vector is searched
            found = await engine.search(SearchRequest(_text(i), limit=10, min_relevance=0))
            assert any(hit.matched_by in ("semantic", "both") for hit in found.results), i
        report = await health_report(runtime, [])
        assert report["store"] == "ready" and report["status"] == "ok"
        notice = report["vector_index"]
        assert not notice["rebuilding"] and "rebuilt" in notice["what_to_do"]
        aside = {entry["collection"]: entry for entry in notice["set_aside"]}
        assert set(aside) == {"venom_memories", "venom_memories_chunks"}
        assert "index_metadata.pickle" in aside["venom_memories"]["problem"]
        assert "link_lists.bin" in aside["venom_memories_chunks"]["problem"]
        for entry in aside.values():
            assert (store / entry["moved_to"]).is_dir() and entry["rebuilt"]
    finally:
        runtime.close()
    assert all(entry["rebuilt"] for entry in json.loads((store / REBUILD_FILE).read_text()))
    chroma = EmbeddedChroma.open(store)  # Chroma's own index, as it wrote it: each vector finds its memory
    try:
        nearest = chroma.get_collection("venom_memories").query(fresh, n_results=1, include=[])
        assert [found[0] for found in nearest["ids"]] == ids
    finally:
        chroma.close()
        EmbeddedChroma.forget(store)
    again = make_runtime(replace(settings, chromadb_path=store, store_process=True))
    try:
        assert len(await again.engine.bulk.vectors(every)) == MEMORIES  # the rebuilt index as Chroma wrote it
        assert len(json.loads((store / REBUILD_FILE).read_text())) == 2  # nothing more set aside
    finally:
        again.close()


STARTS = 3  # `symbiote serve` on a freshly damaged store; 3 of 6 exited 1 before (issue 67 M4)


@pytest.mark.server("the process is the point: `symbiote serve` starting on a damaged store")
def test_the_server_starts_on_a_damaged_store_every_time_and_says_what_it_set_aside(
    pristine: Path, tmp_path: Path
) -> None:
    """The start race: the store's failure to open came back as Chroma's own error class, whose unpickling
    imported chromadb and numpy in one thread while the model's load imported numpy in another."""
    for start in range(STARTS):
        data = tmp_path / f"start-{start}" / "data"
        shutil.copytree(pristine, data)
        (_segments(data)["venom_memories"] / PICKLE).write_bytes(b"")
        server = ServerProcess(data).start()
        try:
            health = httpx.get(f"{server.base_url}/health", timeout=10).json()
            assert health["store"] == "ready", server.log()
            (entry,) = health["vector_index"]["set_aside"]
            assert entry["collection"] == "venom_memories" and "index_metadata.pickle" in entry["problem"]
            assert health["vector_index"]["what_to_do"]
        finally:
            assert server.stop() == 0, server.log()
        assert "partially initialized" not in server.log()


def test_a_store_at_a_relative_path_opens_and_opens_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`CHROMADB_PATH` defaults to `data`, relative to where the server starts: the index check reads
    Chroma's catalogue by a file URI, which only an absolute path has."""
    monkeypatch.chdir(tmp_path)
    for _ in range(2):  # made, then opened with its catalogue on disk
        store = open_embedded_store(Path("data"), MODEL_NAME, MODEL_DIMENSION)
        store.close()
    assert (tmp_path / "data" / CHROMA_FILE).is_file()


def _pickled(folder: Path, change: Any) -> None:
    import pickle

    with (folder / PICKLE).open("rb") as file:
        meta = pickle.load(file)
    (folder / PICKLE).write_bytes(pickle.dumps(change(meta)))


def _node0(folder: Path, offset: int, value: int) -> None:
    """Write a 32-bit word of the first vector's record in data_level0.bin."""
    import struct

    with (folder / "data_level0.bin").open("r+b") as file:
        file.seek(offset)
        file.write(struct.pack("<I", value))


def _header(folder: Path) -> tuple[int, ...]:
    from symbiote.storage.chroma.segment_files import _HEADER

    return tuple(_HEADER.unpack_from((folder / "header.bin").read_bytes()))


def _fewer_labels(meta: dict[str, Any]) -> dict[str, Any]:
    label = next(iter(meta["label_to_id"]))
    key = meta["label_to_id"].pop(label)
    meta["id_to_label"].pop(key)
    return meta


DAMAGES: list[tuple[str, Any, str]] = [
    ("a class in the label map", lambda f: _pickled(f, lambda _m: OrderedDict()), "unexpected collections.OrderedDict"),
    ("no label map", lambda f: _pickled(f, lambda _m: [1, 2]), f"{PICKLE} holds no label map"),
    ("maps of two sizes", lambda f: _pickled(f, lambda m: {**m, "id_to_label": {}}), f"{PICKLE}'s two maps disagree"),
    ("a label map short of one", lambda f: _pickled(f, _fewer_labels), "disagree on which records are indexed"),
    ("no header", lambda f: (f / "header.bin").unlink(), "header.bin is missing"),
    ("no label map file", lambda f: (f / PICKLE).unlink(), f"{PICKLE} is missing for an index of"),
    ("no upper levels", lambda f: (f / "link_lists.bin").unlink(), "link_lists.bin missing"),
    ("too many links", lambda f: _node0(f, 0, _header(f)[10] + 1), "more links than the index allows"),
    ("a link past the end", lambda f: _node0(f, 4, _header(f)[3] + 5), "links to vectors that do not exist"),
]


@pytest.mark.parametrize(("damage", "make", "said"), DAMAGES, ids=[d[0] for d in DAMAGES])
def test_a_label_map_or_index_that_does_not_hold_together_is_found_and_named(
    store: Path, damage: str, make: Any, said: str
) -> None:
    folder = _segments(store)["venom_memories"]
    assert problem(folder) is None
    make(folder)
    found = problem(folder)
    assert found is not None and said in found, (damage, found)
