"""Tags match whatever their case, in the engine's search as in the console's list, and each memory
keeps its tags as they were written; the stored tags are offered most used first."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from symbiote.memory.requests import SearchRequest, StoreRequest
from symbiote.runtime import Runtime
from symbiote.storage import MemoryFilter
from tests.chroma_server import Backend
from tests.conftest import make_runtime


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory, model_dir: Path) -> Iterator[Runtime]:
    built = make_runtime(Backend("embedded", tmp_path_factory.mktemp("tags")).settings())
    yield built
    built.close()


async def test_a_tag_in_any_case_finds_every_spelling_and_changes_none(runtime: Runtime) -> None:
    engine = runtime.engine
    first = await engine.store(StoreRequest("Project Atlas launches on March 14.", tags=["Work"]))
    second = await engine.store(StoreRequest("Atlas uses PostgreSQL 16 with logical replication.", tags=["work", "db"]))
    await engine.store(StoreRequest("Waters the balcony tomatoes every evening.", tags=["garden"]))
    await engine.store(StoreRequest("Atlas standup at 9:30 on weekdays.", tags=["work"]))
    assert list((await engine.tags()).items()) == [("work", 2), ("Work", 1), ("db", 1), ("garden", 1)]
    found = await engine.search(SearchRequest("Atlas", tags=["WORK"], min_relevance=0))
    assert {first.memory_id, second.memory_id} <= {hit.memory_id for hit in found.results}
    where = MemoryFilter(tags=("WORK",)).spelled(await engine.tags())
    listed = await engine.bulk.browse(where, 0, 10)
    assert listed.total == 3 and {first.memory_id, second.memory_id} <= {m.memory_id for m in listed.memories}
    assert (await engine.get(first.memory_id)).tags == ["Work"] and (await engine.get(second.memory_id)).tags == [
        "work",
        "db",
    ]
