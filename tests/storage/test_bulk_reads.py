"""A store past 32,766 memories, the most one Chroma read can return with metadata or text.

Chroma 1.5.9 fails such a read with "too many SQL variables"; the statistics' scan, the newest
page, the retention scan and the keyword index's rebuild read every memory, so they page
(`symbiote.storage.chroma.bulk_reads.read_all`). Filled with random unit vectors in batches (the model
is not what is under test), on the real embedded Chroma; they lie in 8 of the 384 dimensions, which
Chroma indexes in about 60 % of the time it takes for vectors spread over all of them.

The 33,000 memories are filled under `--soak`; a run of the suite fills 2,500 and reads them in pages
of 1,000 (`bulk_reads.PAGE`), so each read still takes three pages and merges them (tests/conftest.py:
volume). Chroma's own limit is met under `--soak`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from symbiote.embedding import MODEL_DIMENSION, MODEL_NAME
from symbiote.memory import created_us
from symbiote.memory.ids import IdGenerator
from symbiote.storage import SIDE_DATABASE_FILE
from symbiote.storage.base import StoredMemory, content_hash
from symbiote.storage.chroma import bulk_reads
from symbiote.storage.chroma.opening import open_embedded_store
from symbiote.storage.filters import MemoryFilter
from tests.conftest import volume

pytestmark = pytest.mark.volume
DRAWN = volume(33_000, 2_500, __name__)  # the full volume is over SQLite's 32,766 variables
SIZE = DRAWN.count


@pytest.fixture(scope="module", autouse=True)
def page() -> Iterator[None]:
    """The sample's reads in pages of 1,000: as many pages as the full volume's."""
    with pytest.MonkeyPatch.context() as patch:
        if not DRAWN.soak:
            patch.setattr(bulk_reads, "PAGE", 1_000)
        yield


@pytest.fixture(scope="module")
def big_store(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    path = tmp_path_factory.mktemp("large") / "data"
    store = open_embedded_store(path, MODEL_NAME, MODEL_DIMENSION)
    ids = IdGenerator()
    rng = np.random.default_rng(3)
    basis = rng.standard_normal((8, MODEL_DIMENSION))
    for start in range(0, SIZE, 3_000):
        batch = []
        vectors = (rng.standard_normal((min(3_000, SIZE - start), 8)) @ basis).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        for i, vector in enumerate(vectors):
            text = f"note {start + i} about the garden"
            mid = ids.new()
            memory = StoredMemory(
                memory_id=mid,
                content=text,
                timestamp="",
                created_us=created_us(mid),
                tags=("bulk",),
                content_hash=content_hash(text),
            )
            batch.append((memory, vector[None, :], [text]))
        store.add_many(batch)
    yield path, store
    store.close()


def test_every_memory_is_read_past_chromas_limit(big_store) -> None:  # type: ignore[no-untyped-def]
    _path, store = big_store
    assert len(store.scan()) == SIZE  # memory_stats' summary, retention
    assert len(store.scan(MemoryFilter(tags=["bulk"]))) == SIZE
    newest = store.page(5, None)  # list_memories
    assert [m.content for m in newest][0] == f"note {SIZE - 1} about the garden"


def test_the_keyword_index_is_rebuilt_past_chromas_limit(big_store) -> None:  # type: ignore[no-untyped-def]
    path, store = big_store
    store.close()
    for suffix in ("", "-wal", "-shm"):
        (Path(path) / f"{SIDE_DATABASE_FILE}{suffix}").unlink(missing_ok=True)
    again = open_embedded_store(path, MODEL_NAME, MODEL_DIMENSION)
    try:
        assert again.counts()["keyword_index"] == SIZE
        assert again.keyword(f"note {SIZE - 1} garden", 1)
    finally:
        again.close()
