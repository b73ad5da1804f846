"""A new memory is answered for once its journal row is committed, before Chroma has it: the store
process writes it to Chroma before reading its next request, and a crash in between loses nothing."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import numpy as np

from symbiote.memory.writing import draft
from symbiote.storage.chroma.opening import open_embedded_store
from symbiote.storage.chroma.store import ChromaMemoryStore

MODEL = "all-MiniLM-L6-v2"
SHORT = "Melanie: I ran a charity race for mental health last Saturday."
LONG = "Caroline: I went to a support group yesterday. It was really powerful. I felt at home there."

# Two memories answered for, then a crash before the process settles: nothing after the answers ran.
CRASH = textwrap.dedent(
    """
    import os, sys
    from dataclasses import replace
    from pathlib import Path
    import numpy as np
    from symbiote.memory.writing import draft
    from symbiote.storage.chroma.opening import open_embedded_store

    store = open_embedded_store(Path(sys.argv[1]), "all-MiniLM-L6-v2", 384, vectors_in_memory=True, write_behind=True)
    rng = np.random.default_rng(7)
    for n, (text, windows) in enumerate([(sys.argv[2], [sys.argv[2]]), (sys.argv[3], [sys.argv[3], "a", "b"])]):
        vector = rng.standard_normal((1, 384)).astype(np.float32)
        memory = replace(draft(text, None, None, None, None, False), memory_id=f"m{n}", created_us=n + 1, timestamp="t")
        existing, _near = store.store_new(memory, vector / np.linalg.norm(vector), windows, 3)
        assert existing is None
    print("answered", flush=True)
    os._exit(0)
    """
)


def _vector(seed: int) -> np.ndarray:
    vector = np.random.default_rng(seed).standard_normal((1, 384)).astype(np.float32)
    return vector / np.linalg.norm(vector)


def _open(path: Path, write_behind: bool = False) -> ChromaMemoryStore:
    return open_embedded_store(path, MODEL, 384, vectors_in_memory=True, write_behind=write_behind)


def test_a_store_is_answered_first_and_written_to_chroma_when_it_settles(tmp_path: Path) -> None:
    store = _open(tmp_path / "data", write_behind=True)
    try:
        memory = replace(draft(SHORT, None, None, None, None, False), memory_id="m1", created_us=1, timestamp="t")
        assert store.store_new(memory, _vector(1), [SHORT], 3) == (None, [])
        before = store.counts()
        store.settle()
        after = store.counts()
        assert (before["memories"], before["keyword_index"]) == (0, 1)  # journalled, answered, not yet in Chroma
        assert (after["memories"], after["keyword_index"]) == (1, 1)
        assert store.get(["m1"])["m1"].content == SHORT
        assert store.store_new(memory, _vector(1), [SHORT], 3)[0] is not None  # the settled one is a duplicate
    finally:
        store.close()


def test_a_crash_after_the_answer_loses_no_memory_and_no_passage(tmp_path: Path) -> None:
    path = tmp_path / "data"
    done = subprocess.run(
        [sys.executable, "-c", CRASH, str(path), SHORT, LONG], capture_output=True, text=True, timeout=120
    )
    assert done.stdout.strip() == "answered", done.stderr
    store = _open(path)
    try:
        found = store.get(["m0", "m1"])
        assert {mid: m.content for mid, m in found.items()} == {"m0": SHORT, "m1": LONG}
        assert store.counts()["memories"] == 2 and store.counts()["keyword_index"] == 2
        assert [mid for mid, _w, _t in store.pending_passages(10)] == ["m1"]  # its sentences are indexed again
        assert [m.memory_id for m in store.keyword("support group", 5, None)][:1] == ["m1"]
    finally:
        store.close()
    again = _open(path)  # the journal was emptied: a second open writes nothing again
    try:
        assert again.counts()["memories"] == 2
    finally:
        again.close()
