"""Export format 2 carries the links between memories, an import keeps them, and a file of
format 1 (from before links) still imports, as memories without links."""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest_asyncio

from symbiote.config import Settings
from symbiote.memory import StoreRequest
from symbiote.runtime import Runtime
from symbiote.transfer.exporting import export_lines
from symbiote.transfer.import_report import ImportReport
from symbiote.transfer.importing import Importer
from tests.conftest import make_runtime


@pytest_asyncio.fixture
async def runtimes(tmp_path: Path, model_dir: Path) -> AsyncIterator[tuple[Runtime, Runtime]]:
    made = [
        make_runtime(Settings(chromadb_path=tmp_path / name, model_dir=model_dir, store_process=False))
        for name in ("source", "target")
    ]
    yield made[0], made[1]
    for runtime in made:
        runtime.close()


async def export_text(runtime: Runtime) -> str:
    return "".join([chunk async for chunk in export_lines(runtime.engine.bulk, None, with_vectors=False)])


async def import_text(runtime: Runtime, text: str) -> ImportReport:
    return await Importer(runtime.engine.bulk, None).run(io.BytesIO(text.encode("utf-8")))


async def test_links_go_out_and_come_back(runtimes: tuple[Runtime, Runtime]) -> None:
    source, target = runtimes
    old = (await source.engine.store(StoreRequest("Team lead is Priya Nair."))).memory_id
    new = (
        await source.engine.store(StoreRequest("Priya left the company; the new team lead is Tom Becker."))
    ).memory_id
    await source.engine.links.keep(old)
    text = await export_text(source)
    header, *lines = [json.loads(line) for line in text.splitlines()]
    assert header["version"] == 2
    by_id = {line["id"]: line for line in lines}
    assert by_id[old]["links"] == {
        "supersedes": None,
        "superseded_by": new,
        "kind": "update",
        "kept": True,
        "by": "server",
    }
    assert by_id[new]["links"]["supersedes"] == old

    report = await import_text(target, text)
    assert report.added == 2 and report.refused_count == 0
    assert (await target.engine.get(old)).superseded_by == new
    assert (await target.engine.get(new)).supersedes == old
    assert await target.engine.links.count() == (1, 0)  # reviewed, as it was
    assert (await export_text(target)).splitlines()[1:] == text.splitlines()[1:]
    assert (await import_text(target, text)).unchanged == 2


async def test_who_made_a_link_goes_out_and_comes_back(runtimes: tuple[Runtime, Runtime]) -> None:
    source, target = runtimes
    old = (await source.engine.store(StoreRequest("Uses an old Samsung Galaxy S8."))).memory_id
    new = (await source.engine.store(StoreRequest("Got an iPhone 13 from my son.", replaces=[old]))).memory_id
    text = await export_text(source)
    by_id = {line["id"]: line for line in map(json.loads, text.splitlines()[1:])}
    assert by_id[old]["links"]["by"] == "assistant" and by_id[new]["links"]["by"] is None
    assert (await import_text(target, text)).added == 2
    [link] = await target.engine.links.links()
    assert link.by == "assistant"
    header, *lines = map(json.loads, text.splitlines())
    for line in lines:
        if line["id"] == old:
            line["links"]["by"] = "someone"
    unmade = "\n".join(json.dumps(line) for line in (header, *lines))
    assert (await import_text(target, unmade)).refused_count == 1


async def test_a_file_of_format_1_imports_without_links_and_a_later_format_is_refused(
    runtimes: tuple[Runtime, Runtime],
) -> None:
    _source, target = runtimes
    header = {"format": "symbiote-memories", "version": 1, "model": "all-MiniLM-L6-v2", "dimension": 384}
    memory = {"kind": "memory", "id": "mem_17954541531855851135", "content": "Prefers dark roast coffee"}
    report = await import_text(target, "\n".join(json.dumps(line) for line in (header, memory)))
    assert report.added == 1
    assert (await target.engine.get(memory["id"])).superseded_by is None

    later = await import_text(target, json.dumps({**header, "version": 3}) + "\n" + json.dumps(memory))
    assert later.added == 0
    assert any("reads 1 and 2" in reason for _line, reason in later.refused) or "reads 1 and 2" in (later.stopped or "")
