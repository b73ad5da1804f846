"""The vectors held in memory beside Chroma (`symbiote.storage.chroma.vectors`), on a real embedded store.

Every write the store makes must reach the rows it searches, whether it lands before, during or
after the rows are read from Chroma; and what the rows answer must be what Chroma holds.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from symbiote.embedding.model import MODEL_DIMENSION, MODEL_NAME, Embedder
from symbiote.memory import created_us as id_micros
from symbiote.memory.ids import IdGenerator
from symbiote.storage.base import MemoryStore, StoredMemory, content_hash
from symbiote.storage.chroma import vectors
from symbiote.storage.chroma.opening import open_embedded_store
from symbiote.storage.chroma.process import StoreProcess
from symbiote.storage.chroma.store import ChromaMemoryStore
from symbiote.storage.filters import MemoryFilter

IDS = IdGenerator()
TEXTS = [
    "I love building web apps with React",
    "We moved to Porto in 2021. My sister is an architect. The car is blue.",
    "Allergic to peanuts",
    "The dentist appointment is on Friday. Bring the insurance card.",
    "The user's cat is called Miso",
    "Runs 10 km every Sunday morning along the river",
]


def _memory(content: str, created: int | None = None, tags: tuple[str, ...] = ()) -> StoredMemory:
    memory_id = IDS.new()
    micros = created if created is not None else id_micros(memory_id)
    stamp = datetime.fromtimestamp(micros / 1e6, tz=UTC).isoformat()
    return StoredMemory(memory_id, content, stamp, micros, tags, content_hash(content))


def _add(
    store: ChromaMemoryStore, model: Embedder, content: str, whole_only: bool = False, **kw: object
) -> StoredMemory:
    memory = _memory(content, **kw)  # type: ignore[arg-type]
    windows = model.windows(content)
    store.add(memory, model.embed(windows[:1] if whole_only else windows), windows)
    return memory


HELD: list[ChromaMemoryStore] = []  # every store `_held` opened, closed after its test (`close_held`)


@pytest.fixture(autouse=True)
def close_held() -> Iterator[None]:
    """What a test left open of the stores `_held` gave it, closed after it."""
    yield
    while HELD:
        store = HELD.pop()
        if store._client._core is not None:  # not closed by the test itself
            store.close()


def _held(path: Path) -> ChromaMemoryStore:
    store = open_embedded_store(path, MODEL_NAME, MODEL_DIMENSION, vectors_in_memory=True)
    HELD.append(store)
    while store.idle_step():
        pass
    return store


def _top(store: ChromaMemoryStore, model: Embedder, text: str, where: MemoryFilter | None = None) -> list[str]:
    return [m.memory_id for m in store.nearest(model.embed([text])[0], 3, where)]


def test_what_is_held_answers_as_chroma_does(tmp_path: Path, model: Embedder) -> None:
    plain = open_embedded_store(tmp_path, MODEL_NAME, MODEL_DIMENSION)
    stored = [_add(plain, model, text) for text in TEXTS]
    plain.close()
    held = _held(tmp_path)
    assert held._vectors is not None and held._vectors.ready
    for question, expected in [("frontend development", 0), ("what does my sister do?", 1), ("nut allergy", 2)]:
        found = held.nearest(model.embed([question])[0], 3)
        assert found[0].memory_id == stored[expected].memory_id
        held._vectors.ready = False  # the same question to Chroma itself
        chroma = held.nearest(model.embed([question])[0], 3)
        held._vectors.ready = True
        assert [m.memory_id for m in found] == [m.memory_id for m in chroma]
        assert np.allclose([m.similarity for m in found], [m.similarity for m in chroma], atol=1e-5)
    assert held.counts()["memories"] == len(TEXTS) and held.count() == len(TEXTS)
    assert held.counts()["passages"] == int(held._chunks.count())


def test_every_kind_of_write_reaches_the_rows(tmp_path: Path, model: Embedder) -> None:
    store = _held(tmp_path)
    react = _add(store, model, TEXTS[0])
    porto = _add(store, model, TEXTS[1], whole_only=True)  # its sentences queued, indexed after
    assert _top(store, model, "what does my sister do for a living?")[:1] == [porto.memory_id]
    ((mid, windows, _text),) = store.pending_passages(10)
    assert store.add_passages([(mid, model.embed(windows[1:]), windows)]) == 1
    assert store.nearest(model.embed(["my sister is an architect"])[0], 1)[0].similarity > 0.9  # its own sentence

    rewritten = replace(react, content="Grows tomatoes on the balcony", content_hash=content_hash("Grows tomatoes"))
    store.replace(rewritten, model.embed(model.windows(rewritten.content)), model.windows(rewritten.content))
    assert _top(store, model, "vegetable gardening")[:1] == [react.memory_id]
    assert store.nearest(model.embed([TEXTS[0]])[0], 1)[0].similarity < 0.5  # the old text's vector is gone

    later = replace(rewritten, created_us=rewritten.created_us + 10**9)
    store.replace(later, None, [later.content])  # metadata only: the time filter follows it
    assert react.memory_id in _top(store, model, "tomatoes", MemoryFilter(after_us=later.created_us))
    assert react.memory_id not in _top(store, model, "tomatoes", MemoryFilter(before_us=later.created_us))

    assert store.delete(porto.memory_id)
    assert porto.memory_id not in _top(store, model, "what does my sister do for a living?")
    assert store.counts()["memories"] == 1 and store.counts()["passages"] == 0


def test_what_is_read_again_after_a_write_is_what_the_write_left(tmp_path: Path, model: Embedder) -> None:
    """Records read once are held; a write forgets what it touched, so no read returns the old."""
    store = _held(tmp_path)
    cat = _add(store, model, TEXTS[4], tags=("pets",))
    assert store.get([cat.memory_id])[cat.memory_id].tags == ("pets",)  # read, and now held
    assert store.find_content(cat.content_hash).memory_id == cat.memory_id

    renamed = replace(
        cat, content="The user's cat is called Tofu", content_hash=content_hash("The user's cat is called Tofu")
    )
    store.replace(renamed, model.embed([renamed.content]), [renamed.content])
    assert store.get([cat.memory_id])[cat.memory_id].content == renamed.content
    assert store.find_content(cat.content_hash) is None
    assert store.find_content(renamed.content_hash).memory_id == cat.memory_id
    assert store.find_contents([cat.content_hash]) == {}

    bookmarked = replace(renamed, tags=(), bookmarked=True)
    store.replace(bookmarked, None, [bookmarked.content])
    again = store.get([cat.memory_id])[cat.memory_id]
    assert (again.tags, again.bookmarked, again.content) == ((), True, renamed.content)

    assert store.delete(cat.memory_id)
    assert store.get([cat.memory_id]) == {} and store.find_content(renamed.content_hash) is None


def test_near_memories_of_a_new_store_come_from_the_rows(tmp_path: Path, model: Embedder) -> None:
    store = _held(tmp_path)
    cat = _add(store, model, TEXTS[4])
    kitten = _memory("Miso the cat turns five in May")
    existing, near = store.store_new(kitten, model.embed([kitten.content]), [kitten.content], 3)
    assert existing is None
    assert [(other.memory_id, other.content) for other, _cos in near] == [(cat.memory_id, TEXTS[4])]
    assert near[0][1] > 0.5


def test_a_filter_on_tags_is_left_to_chroma(tmp_path: Path, model: Embedder) -> None:
    store = _held(tmp_path)
    work = _add(store, model, "Deploys the API on Fridays", tags=("work",))
    _add(store, model, "Deploys the garden shed roof on Fridays")
    assert _top(store, model, "deploying", MemoryFilter(tags=("work",))) == [work.memory_id]


def test_writes_while_the_rows_are_read_leave_them_whole(
    tmp_path: Path, model: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pages of two records: deletes between them shift Chroma's offsets, so a record is skipped and
    the counts disagree; the rows are read again and end as Chroma holds them."""
    monkeypatch.setattr(vectors, "PAGE", 2)
    plain = open_embedded_store(tmp_path, MODEL_NAME, MODEL_DIMENSION)
    stored = [_add(plain, model, text) for text in TEXTS]
    plain.close()
    store = open_embedded_store(tmp_path, MODEL_NAME, MODEL_DIMENSION, vectors_in_memory=True)
    HELD.append(store)
    assert store.idle_step()  # the first page
    store.delete(stored[0].memory_id)
    store.delete(stored[1].memory_id)
    added = _add(store, model, "Plays the cello in a quartet")
    while store.idle_step():
        pass
    assert store._vectors is not None and store._vectors.ready
    assert len(store._vectors.whole) == int(store._memories.count()) == len(TEXTS) - 1
    assert _top(store, model, "string instrument music")[:1] == [added.memory_id]
    assert stored[1].memory_id not in _top(store, model, "what does my sister do for a living?")


def test_a_collection_past_the_limit_is_searched_in_chroma(
    tmp_path: Path, model: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vectors, "EXACT_ROWS", 4)
    store = _held(tmp_path)
    stored = [_add(store, model, text) for text in TEXTS]
    assert store._memories.rows.dropped and len(store._memories.rows) == 0  # its memory is given back
    assert _top(store, model, "nut allergy")[:1] == [stored[2].memory_id]
    assert store.count() == len(TEXTS)
    store.close()
    again = _held(tmp_path)  # too many at open: not read at all
    assert again._memories.rows.dropped and again._vectors is not None and again._vectors.ready
    assert _top(again, model, "what does my sister do?")[:1] == [stored[1].memory_id]


def test_the_store_process_reads_the_vectors_between_requests(tmp_path: Path, model: Embedder) -> None:
    plain = open_embedded_store(tmp_path, MODEL_NAME, MODEL_DIMENSION)
    stored = [_add(plain, model, text) for text in TEXTS]
    plain.close()
    host = StoreProcess(tmp_path, first_work_waits=False)  # as on two cores
    try:
        store = host.memories(MODEL_NAME, MODEL_DIMENSION)
        time.sleep(1.0)  # the child's idle moment between requests (a loaded machine may delay it)
        assert store.call(MemoryStore.idle_step) is False  # nothing left: the child read them before this call
        found = store.call(MemoryStore.nearest, model.embed(["nut allergy"])[0], 3)
        assert found[0].memory_id == stored[2].memory_id
    finally:
        host.close()


def test_on_one_core_the_store_process_reads_the_vectors_after_the_first_call(tmp_path: Path, model: Embedder) -> None:
    """On half a vCPU the two processes share one core's time: a wake answers first, and the child
    leaves the vectors until the server's first call."""
    plain = open_embedded_store(tmp_path, MODEL_NAME, MODEL_DIMENSION)
    stored = [_add(plain, model, text) for text in TEXTS]
    plain.close()
    host = StoreProcess(tmp_path, first_work_waits=True)
    try:
        store = host.memories(MODEL_NAME, MODEL_DIMENSION)
        assert store.call(MemoryStore.idle_step) is True  # the first call read the first page: none was read before
        found = store.call(MemoryStore.nearest, model.embed(["nut allergy"])[0], 3)
        assert found[0].memory_id == stored[2].memory_id
        assert store.call(MemoryStore.idle_step) is False  # the rest read between those calls
    finally:
        host.close()


def test_records_held_from_a_write_or_a_read_are_what_chroma_returns(tmp_path: Path, model: Embedder) -> None:
    """A search reads its likely results' records from those held (just added, or read with the
    vectors between requests); each must be the memory Chroma itself returns."""
    store = _held(tmp_path)
    memories = [
        _add(store, model, TEXTS[0], tags=("work", "react")),
        _add(store, model, TEXTS[2]),
        replace(_memory(TEXTS[4]), type="fact", confidence=0.9, bookmarked=True, conversation_id="chat-1"),
    ]
    store.add(memories[2], model.embed(model.windows(TEXTS[4])), model.windows(TEXTS[4]))
    ids = [m.memory_id for m in memories]
    held = store.get(ids)
    store.close()
    plain = open_embedded_store(tmp_path, MODEL_NAME, MODEL_DIMENSION)  # nothing held: Chroma answers
    from_chroma = plain.get(ids)
    plain.close()
    again = _held(tmp_path)  # read back with the vectors
    assert set(ids) <= again._memories._records.keys()
    assert held == from_chroma == again.get(ids) == {m.memory_id: m for m in memories}


@pytest.mark.slow
def test_the_store_process_holds_the_words_a_search_asked_for_between_requests(tmp_path: Path, model: Embedder) -> None:
    """The child's idle moments keep coming back: after a search, it holds the scores of the
    words that search asked for (more than one idle step of rows), and answers the same."""
    plain = open_embedded_store(tmp_path, MODEL_NAME, MODEL_DIMENSION)
    texts = [f"Coffee tasting, note {i}" for i in range(260)]  # past one step of 250 rows
    for text, vector in zip(texts, model.embed(texts)):
        plain.add(_memory(text), np.asarray([vector]), [text])
    plain.close()
    host = StoreProcess(tmp_path)
    try:
        store = host.memories(MODEL_NAME, MODEL_DIMENSION)
        time.sleep(1.0)  # the child reads the vectors: its idle work is done
        asked = store.call(MemoryStore.keyword_words, ["coffee"], 10)  # too common to hold at once: wanted
        time.sleep(1.0)  # idle again: the child holds the word
        assert store.call(MemoryStore.idle_step) is False  # nothing left: it was done between the requests
        assert store.call(MemoryStore.keyword_words, ["coffee"], 10) == asked and len(asked) == 10
    finally:
        host.close()
