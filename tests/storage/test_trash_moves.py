"""A move into or out of the trash that fails or dies half way (`symbiote.storage.chroma.trashing`):
each memory ends stored or in the trash, never neither, with no keyword entry for a memory that is
not stored. The real embedded Chroma, a real full disk (a small tmpfs) and a real kill -9."""

from __future__ import annotations

import dataclasses
import os
import random
import signal
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from symbiote.config import Settings
from symbiote.embedding.model import MODEL_DIMENSION, MODEL_NAME
from symbiote.errors import StoreUnavailableError
from symbiote.memory import SearchRequest, StoreRequest
from symbiote.memory.ids import IdGenerator
from symbiote.storage.base import StoredMemory, content_hash
from symbiote.storage.chroma.opening import open_embedded_store
from symbiote.storage.chroma.side_database import TrashRow
from symbiote.storage.chroma.store import ChromaMemoryStore
from tests.conftest import make_runtime

IDS = IdGenerator()
ROOT = Path(__file__).resolve().parents[2]


def fill(store: ChromaMemoryStore, n: int, seed: int = 1) -> list[StoredMemory]:
    rng = np.random.default_rng(seed)
    stored = []
    for i in range(n):
        text = f"Memory {i}: the blue notebook is on shelf {i}. It holds the {i}th list."
        memory = StoredMemory(IDS.new(), text, "2026-01-01T00:00:00Z", 1_000_000 + i, (), content_hash(text))
        vectors = rng.standard_normal((2, MODEL_DIMENSION)).astype(np.float32)
        store.add(memory, vectors, [text, f"It holds the {i}th list."])
        stored.append(memory)
    return stored


def where(store: ChromaMemoryStore, memory_ids: list[str]) -> dict[str, str]:
    """Each memory's place: "stored", "trash", "both" or "neither"; and the keyword index must hold
    exactly the stored ones."""
    stored = set(store.get(memory_ids))
    trashed = {item.memory.memory_id for item in store.trashed(0, 0, memory_ids)[0]}
    assert store._lexical.ids() == set(store.get(list(store._lexical.ids()))), "a keyword entry for no memory"
    assert store.counts()["keyword_index"] == store.count()
    return {
        mid: {(True, False): "stored", (False, True): "trash", (True, True): "both", (False, False): "neither"}[
            (mid in stored, mid in trashed)
        ]
        for mid in memory_ids
    }


def reopen(store: ChromaMemoryStore, path: Path) -> ChromaMemoryStore:
    store.close()
    return open_embedded_store(path, MODEL_NAME, MODEL_DIMENSION)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount_point = tmp_path / f"disk-{uuid.uuid4().hex[:6]}"
    mount_point.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=40M", "tmpfs", str(mount_point)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    yield mount_point
    subprocess.run(["umount", "-l", str(mount_point)], capture_output=True)


def test_a_delete_on_a_full_disk_leaves_the_memory_stored_and_says_so(small_disk: Path) -> None:
    path = small_disk / "data"
    store = open_embedded_store(path, MODEL_NAME, MODEL_DIMENSION)
    memories = fill(store, 20)
    ids = [m.memory_id for m in memories]
    filler = small_disk / "filler"
    with filler.open("wb") as handle:
        try:
            while True:
                handle.write(b"\0" * 65536)
        except OSError:
            pass
    for mid in ids[:5]:
        try:
            assert store.trash([mid], "owner", 5) == [mid]
            assert where(store, [mid]) == {mid: "trash"}
        except StoreUnavailableError as exc:
            assert f"{mid} is still stored, not in the trash" in str(exc) and "Storage full" in str(exc)
            assert where(store, [mid]) == {mid: "stored"}
    filler.unlink()
    store = reopen(store, path)
    try:
        places = where(store, ids)
        assert set(places.values()) <= {"stored", "trash"}, places
        assert store.trash(ids[:5], "owner", 6) == [mid for mid in ids[:5] if places[mid] == "stored"]
        assert set(where(store, ids[:5]).values()) == {"trash"}
    finally:
        store.close()


async def test_delete_memory_on_a_full_disk_through_the_store_process_says_the_memory_is_still_stored(
    settings: Settings, small_disk: Path
) -> None:
    # the run: the free-space reserve off, a 40 MB disk filled; the store in its own process
    engine = make_runtime(
        dataclasses.replace(settings, chromadb_path=small_disk / "data", min_free_mb=0, store_process=True)
    ).engine
    try:
        kept = await engine.store(StoreRequest("The spare tyre is in the left garage bay"))
        # in Chroma before the disk fills (a read settles the writes behind): Chroma 1.5.9 meeting a full
        # disk itself can stay wedged (`symbiote.storage.diskspace`); here the delete's first write meets it
        assert (await engine.get(kept.memory_id)).content == "The spare tyre is in the left garage bay"
        filler = small_disk / "filler"
        with filler.open("wb") as handle:
            try:
                while True:
                    handle.write(b"\0" * 65536)
            except OSError:
                pass
        with pytest.raises(StoreUnavailableError, match=f"Storage full: .*{kept.memory_id} is still stored"):
            await engine.delete(kept.memory_id)
        assert (await engine.get(kept.memory_id)).content == "The spare tyre is in the left garage bay"
        assert (await engine.trash.page(0, 10)).total == 0
        hits = (await engine.search(SearchRequest("spare tyre garage"))).results
        assert [hit.memory_id for hit in hits] == [kept.memory_id]
        filler.unlink()
        assert (await engine.delete(kept.memory_id)).deleted
        assert [item.memory.memory_id for item in (await engine.trash.page(0, 10)).items] == [kept.memory_id]
    finally:
        engine.close()


def trash_rows(store: ChromaMemoryStore, memories: list[StoredMemory]) -> list[TrashRow]:
    got = store._memories.get(ids=[m.memory_id for m in memories], include=["embeddings", "documents", "metadatas"])
    return [
        TrashRow(mid, 7, "owner", doc, dict(meta), np.asarray(vector, dtype=np.float32))
        for mid, doc, meta, vector in zip(got["ids"], got["documents"], got["metadatas"], got["embeddings"])
    ]


def test_a_delete_that_died_after_its_trash_row_leaves_the_memory_stored(tmp_path: Path) -> None:
    # what a kill between the side database's commit and Chroma's delete leaves on disk
    store = open_embedded_store(tmp_path / "data", MODEL_NAME, MODEL_DIMENSION)
    memories = fill(store, 4)
    rows = trash_rows(store, memories[:2])
    with store._lexical.transaction(durable=True) as tx:
        store._lexical.trash.put(rows)
        store._lexical.trash.mark([row.memory_id for row in rows])
        for row in rows:
            tx.delete(row.memory_id)
    store = reopen(store, tmp_path / "data")
    try:
        ids = [m.memory_id for m in memories]
        assert where(store, ids) == dict.fromkeys(ids, "stored")
        assert store._lexical.trash.moving() == []
        assert store.keyword("blue notebook shelf 1", 4)  # the keyword entries are back
        assert store.trash(ids[:2], "owner", 8) == ids[:2] and where(store, ids[:2]) == dict.fromkeys(ids[:2], "trash")
    finally:
        store.close()


def test_a_delete_that_died_after_chroma_let_go_leaves_the_memory_in_the_trash(tmp_path: Path) -> None:
    store = open_embedded_store(tmp_path / "data", MODEL_NAME, MODEL_DIMENSION)
    memories = fill(store, 4)
    rows = trash_rows(store, memories[:2])
    with store._lexical.transaction(durable=True):
        store._lexical.trash.put(rows)
        store._lexical.trash.mark([row.memory_id for row in rows])  # the keyword entries left behind, too
    store._chunks.delete(ids=[f"{row.memory_id}#1" for row in rows])
    store._memories.delete(ids=[row.memory_id for row in rows])
    store = reopen(store, tmp_path / "data")
    try:
        ids = [m.memory_id for m in memories]
        assert where(store, ids) == {ids[0]: "trash", ids[1]: "trash", ids[2]: "stored", ids[3]: "stored"}
        assert store.restore(ids[:2]) == ids[:2] and where(store, ids) == dict.fromkeys(ids, "stored")
    finally:
        store.close()


def test_a_restore_that_died_after_chroma_took_it_back_leaves_it_stored(tmp_path: Path) -> None:
    store = open_embedded_store(tmp_path / "data", MODEL_NAME, MODEL_DIMENSION)
    memories = fill(store, 3)
    ids = [m.memory_id for m in memories]
    assert store.trash(ids[:1], "owner", 9) == ids[:1]
    row = store._lexical.trash.take(ids[:1])[0]
    with store._lexical.transaction(durable=True):
        store._lexical.trash.mark(ids[:1])
    store._memories.add(ids=ids[:1], embeddings=[row.vector.tolist()], documents=[row.body], metadatas=[row.meta])
    store = reopen(store, tmp_path / "data")
    try:
        assert where(store, ids) == dict.fromkeys(ids, "stored")
        assert [mid for mid, _w, _t in store.pending_passages(10)] == ids[:1]  # its passages, embedded again
    finally:
        store.close()


MOVER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from symbiote.embedding.model import MODEL_DIMENSION, MODEL_NAME
    from symbiote.storage.chroma.opening import open_embedded_store

    store = open_embedded_store(Path(sys.argv[1]), MODEL_NAME, MODEL_DIMENSION)
    print("open", flush=True)
    for n, mid in enumerate(sys.argv[2:]):
        store.trash([mid], "owner", 10 + n)
        print("deleted", mid, flush=True)
    """
)


def test_kill_9_mid_delete_leaves_each_memory_stored_or_in_the_trash(tmp_path: Path) -> None:
    seed = random.randrange(1 << 30)
    print(f"seed {seed}")
    rng = random.Random(seed)
    path = tmp_path / "data"
    store = open_embedded_store(path, MODEL_NAME, MODEL_DIMENSION)
    ids = [m.memory_id for m in fill(store, 40)]
    store.close()
    acknowledged: set[str] = set()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for round_ in range(3):
        left = [mid for mid in ids if mid not in acknowledged]
        if len(left) < 6:
            break
        with subprocess.Popen(
            [sys.executable, "-c", MOVER, str(path), *left], stdout=subprocess.PIPE, text=True, env=env
        ) as mover:
            assert mover.stdout is not None
            assert mover.stdout.readline().strip() == "open"
            for _ in range(rng.randrange(1, 6)):  # then killed at once, mid-way through the next delete
                acknowledged.add(mover.stdout.readline().split()[1])
            os.kill(mover.pid, signal.SIGKILL)
        store = open_embedded_store(path, MODEL_NAME, MODEL_DIMENSION)
        try:
            places = where(store, ids)
        finally:
            store.close()
        assert set(places.values()) <= {"stored", "trash"}, (round_, places)
        assert all(places[mid] == "trash" for mid in acknowledged), round_
        acknowledged |= {mid for mid, place in places.items() if place == "trash"}


def test_an_update_that_died_after_chroma_took_the_new_text_is_indexed_by_it_at_open(tmp_path: Path) -> None:
    # what a kill between Chroma's update and the keyword entry's leaves on disk (L2)
    store = open_embedded_store(tmp_path / "data", MODEL_NAME, MODEL_DIMENSION)
    (memory,) = fill(store, 1)
    with store._lexical.transaction(durable=True):
        store._lexical.trash.mark([memory.memory_id])
    text = "The red notebook moved to the attic. Its lists are gone."
    store._memories.update(ids=[memory.memory_id], documents=[text])
    store = reopen(store, tmp_path / "data")
    try:
        assert where(store, [memory.memory_id]) == {memory.memory_id: "stored"}
        assert store._lexical.bodies([memory.memory_id]) == {memory.memory_id: text}
        assert [m.memory_id for m in store.keyword("red notebook attic", 3)] == [memory.memory_id]
        assert store.keyword("blue shelf", 3) == []
        assert [mid for mid, _w, _t in store.pending_passages(10)] == [memory.memory_id]  # passages made again
    finally:
        store.close()


def test_a_delete_for_good_that_died_after_chroma_let_go_leaves_no_keyword_entry(tmp_path: Path) -> None:
    # retention's delete (`delete_many`), killed between Chroma's delete and the keyword entry's
    store = open_embedded_store(tmp_path / "data", MODEL_NAME, MODEL_DIMENSION)
    memories = fill(store, 3)
    gone = memories[0].memory_id
    with store._lexical.transaction(durable=True):
        store._lexical.trash.mark([gone])
    store._memories.delete(ids=[gone])
    store = reopen(store, tmp_path / "data")
    try:
        assert where(store, [m.memory_id for m in memories]) == {
            gone: "neither",  # deleted for good, as asked
            memories[1].memory_id: "stored",
            memories[2].memory_id: "stored",
        }
    finally:
        store.close()


def test_deleting_restoring_or_purging_nothing_changes_nothing(tmp_path: Path) -> None:
    store = open_embedded_store(tmp_path / "data", MODEL_NAME, MODEL_DIMENSION)
    try:
        ids = [m.memory_id for m in fill(store, 2)]
        assert store.trash([], "owner", 1) == [] and store.purge([]) == [] and store.restore([]) == []
        assert where(store, ids) == dict.fromkeys(ids, "stored")
    finally:
        store.close()


def test_a_delete_of_a_memory_chroma_has_not_taken_yet_writes_it_then_trashes_it(tmp_path: Path) -> None:
    # acknowledged and journalled, its Chroma write refused so far (a full disk that has since freed)
    store = open_embedded_store(tmp_path / "data", MODEL_NAME, MODEL_DIMENSION)
    try:
        (kept,) = fill(store, 1)
        text = "The passport is in the second drawer of the hall desk."
        memory = StoredMemory(IDS.new(), text, "2026-01-02T00:00:00Z", 2_000_000, ("travel",), content_hash(text))
        vector = np.random.default_rng(3).standard_normal((1, MODEL_DIMENSION)).astype(np.float32)
        with store._lexical.transaction(durable=True) as tx:
            tx.add(memory.memory_id, memory.created_us, text)
            store._lexical.unwritten.put([(memory, vector, [text])])
        assert store._memories.get(ids=[memory.memory_id])["ids"] == []
        assert store.trash([memory.memory_id], "owner", 11) == [memory.memory_id]
        assert where(store, [memory.memory_id, kept.memory_id]) == {memory.memory_id: "trash", kept.memory_id: "stored"}
        (item,) = store.trashed(0, 10)[0]
        assert (item.memory.content, item.memory.tags, item.deleted_by) == (text, ("travel",), "owner")
        assert store._lexical.unwritten.all() == []
        assert store.restore([memory.memory_id]) == [memory.memory_id]
        assert store.get([memory.memory_id])[memory.memory_id].content == text
    finally:
        store.close()


def test_a_restore_chroma_refuses_leaves_the_memory_in_the_trash_and_says_so(tmp_path: Path) -> None:
    # a trash row whose vector Chroma refuses (here one of another dimension): nothing is lost
    store = open_embedded_store(tmp_path / "data", MODEL_NAME, MODEL_DIMENSION)
    try:
        memories = fill(store, 2)
        (row,) = trash_rows(store, memories[:1])
        assert store.trash([row.memory_id], "owner", 12) == [row.memory_id]
        with store._lexical.transaction(durable=True):
            store._lexical.trash.remove([row.memory_id])
            store._lexical.trash.put([dataclasses.replace(row, vector=row.vector[:100])])
        with pytest.raises(StoreUnavailableError, match=f"Restoring failed .*{row.memory_id} is still in the trash"):
            store.restore([row.memory_id])
        assert where(store, [m.memory_id for m in memories]) == {
            row.memory_id: "trash",
            memories[1].memory_id: "stored",
        }
        assert store._lexical.trash.moving() == []
        (item,) = store.trashed(0, 10)[0]
        assert item.memory.content == row.body
    finally:
        store.close()


def test_an_update_chroma_refuses_leaves_the_memory_as_it_was(tmp_path: Path) -> None:
    store = open_embedded_store(tmp_path / "data", MODEL_NAME, MODEL_DIMENSION)
    try:
        (memory,) = fill(store, 1)
        text = "The red notebook moved to the attic."
        changed = dataclasses.replace(memory, content=text, content_hash=content_hash(text))
        wrong = np.ones((1, 100), dtype=np.float32)  # vectors of another dimension: Chroma refuses the write
        with pytest.raises(Exception, match="dimension"):
            store.replace(changed, wrong, [text])
        assert store.get([memory.memory_id])[memory.memory_id].content == memory.content
        assert store._lexical.bodies([memory.memory_id]) == {memory.memory_id: memory.content}
        assert store._lexical.trash.moving() == [] and store.keyword("attic", 3) == []
        with pytest.raises(KeyError):
            store.replace(dataclasses.replace(changed, memory_id="mem_00000000000000010000"), None, [text])
        assert store.delete_many(["mem_00000000000000010000"]) == [] and store.delete_many([]) == []
        assert where(store, [memory.memory_id]) == {memory.memory_id: "stored"}
    finally:
        store.close()


def test_a_restore_on_a_full_disk_leaves_the_memory_in_the_trash_and_says_so(small_disk: Path) -> None:
    path = small_disk / "data"
    store = open_embedded_store(path, MODEL_NAME, MODEL_DIMENSION)
    try:
        memories = fill(store, 6)
        ids = [m.memory_id for m in memories]
        assert store.trash(ids[:3], "owner", 5) == ids[:3]
        filler = small_disk / "filler"
        with filler.open("wb") as handle:
            try:
                while True:
                    handle.write(b"\0" * 65536)
            except OSError:
                pass
        refused = 0
        for mid in ids[:3]:
            try:
                assert store.restore([mid]) == [mid]
                assert where(store, [mid]) == {mid: "stored"}
            except StoreUnavailableError as exc:
                refused += 1
                assert f"{mid} is still in the trash" in str(exc) and "Storage full" in str(exc)
                assert where(store, [mid]) == {mid: "trash"}
        print(f"{refused} of 3 restores refused on the full disk")
        filler.unlink()
        store = reopen(store, path)
        assert set(where(store, ids).values()) <= {"stored", "trash"}
        left = [mid for mid in ids[:3] if where(store, [mid])[mid] == "trash"]
        assert store.restore(left) == left and where(store, ids) == dict.fromkeys(ids, "stored")
    finally:
        store.close()
