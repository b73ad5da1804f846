"""A search's candidates in one call (`storage/chroma/candidates`): the same whichever way they are found.

Two embedded stores hold the same memories: one searches the vectors it holds (the keyword index
read first, in the caller's thread), the other asks Chroma (the keyword index read in a thread
beside it). Real Chroma, the real model.
"""

from __future__ import annotations

import contextlib
from dataclasses import replace
from pathlib import Path

import numpy as np

from symbiote.embedding import MODEL_DIMENSION, MODEL_NAME
from symbiote.embedding.model import Embedder
from symbiote.memory import created_us
from symbiote.memory.ids import IdGenerator
from symbiote.retrieval.ranking import fusion
from symbiote.storage.base import StoredMemory, content_hash
from symbiote.storage.chroma.opening import open_embedded_store
from symbiote.storage.chroma.store import ChromaMemoryStore
from symbiote.storage.filters import MemoryFilter

IDS = IdGenerator()
TEXTS = [
    "Caroline went to the adoption agency on Tuesday",
    "I love building web apps with React",
    "We moved to Porto in 2021. My sister is an architect.",
    "Allergic to peanuts, so no satay",
    "The weather was lovely all week",
]


def _filled(path: Path, model: Embedder, memories: list[StoredMemory], held: bool) -> ChromaMemoryStore:
    store = open_embedded_store(path, MODEL_NAME, MODEL_DIMENSION, vectors_in_memory=held)
    for memory in memories:
        windows = model.windows(memory.content)
        store.add(memory, model.embed(windows), windows)
    while store.idle_step():  # the held vectors read in
        pass
    return store


def test_candidates_are_the_same_from_held_vectors_and_from_chroma(tmp_path: Path, model: Embedder) -> None:
    memories = []
    for text in TEXTS:
        memory_id = IDS.new()
        micros = created_us(memory_id)
        memories.append(StoredMemory(memory_id, text, "", micros, ("home",), content_hash(text)))
    with contextlib.ExitStack() as opened:  # both stores closed, whatever fails
        held = _filled(tmp_path / "held", model, memories, held=True)
        opened.callback(held.close)
        asked = _filled(tmp_path / "asked", model, memories, held=False)
        opened.callback(asked.close)
        for query in ("what did Caroline do?", "frontend development preferences", "what does my sister do?"):
            vector = model.embed([query])[0]
            ranked = {}
            for name, store in (("held", held), ("asked", asked)):
                for where in (None, MemoryFilter(tags=("home",))):
                    candidates, records, _vectors = store.search(vector, query, 10, [], 0, where, fusion(3))
                    ranked[name, where is None] = [c.memory_id for c in candidates]
                    assert set(records) >= set(ranked[name, where is None][:3])
            assert len({tuple(ids) for ids in ranked.values()}) == 1, ranked
        for store in (held, asked):  # a topic's words find its members, on either path
            found = store.search(model.embed(["Caroline"])[0], "Caroline", 10, ["adoption"], 5, None, fusion(3))[0]
            assert found[0].memory_id == memories[0].memory_id and found[0].keyword > 0 and found[0].topic > 0


def test_a_search_brings_the_vectors_it_holds_as_the_store_reads_them(tmp_path: Path, model: Embedder) -> None:
    """Asked for, the vectors of the records a search read come back with it where the store holds
    them: each memory's whole text and passages, its stored vectors at unit length (to float32's last
    place: Chroma gives back what it was given normalised its own way, the copy held normalises what it
    was given). A store holding none returns none (the caller reads them)."""
    memories = [StoredMemory(IDS.new(), text, "", 0, (), content_hash(text)) for text in TEXTS]
    memories = [replace(m, created_us=created_us(m.memory_id)) for m in memories]
    with contextlib.ExitStack() as opened:
        held = _filled(tmp_path / "held", model, memories, held=True)
        opened.callback(held.close)
        asked = _filled(tmp_path / "asked", model, memories, held=False)
        opened.callback(asked.close)
        query = "what does my sister do?"
        plan = replace(fusion(3), vectors=True)
        _candidates, records, vectors = held.search(model.embed([query])[0], query, 10, [], 0, None, plan)
        assert set(vectors) == set(records) and any(len(rows) > 1 for rows in vectors.values())
        for memory_id, stored in held.vectors(list(records)).items():
            unit = stored / np.maximum(np.linalg.norm(stored, axis=1, keepdims=True), 1e-9)
            assert vectors[memory_id].dtype == np.float32 and vectors[memory_id].shape == unit.shape
            assert np.abs(vectors[memory_id] - unit).max() <= np.finfo(np.float32).eps
        assert held.search(model.embed([query])[0], query, 10, [], 0, None, fusion(3))[2] == {}
        assert asked.search(model.embed([query])[0], query, 10, [], 0, None, plan)[2] == {}
