"""Issue 39, the imports, over the real app (its console's import, MCP through the SDK's in-memory
client) and real stores: the configured content cap, ids in ASCII digits only, links kept only between memories
that are there and agree in both directions (others dropped and counted), and no torn links
after a kill -9 mid-import."""

from __future__ import annotations

import dataclasses
import io
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from symbiote.config import Settings
from symbiote.memory import is_memory_id
from symbiote.runtime import Runtime
from symbiote.storage import StoredMemory
from symbiote.transfer.import_report import ImportReport
from symbiote.transfer.importing import BATCH, Importer
from tests.conftest import InProcess, ServerProcess, make_app, make_runtime
from tests.transfer.test_hardening import HEADER, Console, InProcessConsole

HEADER_2 = json.dumps({"format": "symbiote-memories", "version": 2, "model": "all-MiniLM-L6-v2", "dimension": 384})


def mid(n: int) -> str:
    return f"mem_{1_700_000_000_000_000 + n * 1_000_000:016d}0000"


def line(n: int, content: str, links: dict[str, Any] | None = None) -> str:
    record: dict[str, Any] = {"kind": "memory", "id": mid(n), "content": content}
    if links is not None:
        record["links"] = {"supersedes": None, "superseded_by": None, "kind": "update", "kept": False, **links}
    return json.dumps(record, ensure_ascii=False)


@pytest.fixture
def capped(settings: Settings) -> Iterator[InProcess]:
    """The app in this process over a store whose memories hold at most 2,000 bytes (loopback, auth
    off: the console is open)."""
    capped = dataclasses.replace(settings, max_content_bytes=2000)
    built = make_runtime(capped)
    yield InProcess(built, make_app(capped, runtime=built))
    built.close()


async def test_an_import_holds_memories_to_the_configured_cap(capped: InProcess) -> None:
    """Before, 99,000- and 5,000-byte lines were both added under a 2,000-byte cap."""
    lines = [HEADER, json.dumps({"kind": "memory", "content": "Capped import: a short note fits."})]
    lines += [
        json.dumps({"kind": "memory", "content": f"Capped import {size}: " + "x" * size}) for size in (5000, 99000)
    ]
    async with capped.http() as http:
        report = await (await InProcessConsole.open(http)).run(("\n".join(lines) + "\n").encode())
    assert report["state"] == "done" and report["added"] == 1 and report["refused"] == 2, report
    page = report["page"]
    assert (
        "line 3: content is at least 5,020 bytes; a memory holds at most 2,000 bytes (SYMBIOTE_MAX_CONTENT_BYTES)"
        in page
    )
    assert "line 4: content is at least 99,021 bytes" in page


async def test_ids_take_ascii_digits_only(capped: InProcess) -> None:
    """Before, `\\d` took fullwidth and Arabic-Indic digits: such ids were stored and looked up."""
    fullwidth = "mem_" + "１" * 20
    arabic = "mem_" + "١٢٣٤٥٦٧٨٩٠" * 2
    assert not is_memory_id(fullwidth) and not is_memory_id(arabic) and not is_memory_id(mid(1) + "\n")
    assert is_memory_id(mid(1))
    lines = [HEADER] + [
        json.dumps({"kind": "memory", "id": i, "content": f"Odd digits {n}."}, ensure_ascii=False)
        for n, i in enumerate((fullwidth, arabic))
    ]
    async with capped.http() as http:
        report = await (await InProcessConsole.open(http)).run(("\n".join(lines) + "\n").encode())
    assert report["added"] == 0 and report["refused"] == 2, report
    assert "is not a memory id" in report["page"]
    async with Client(capped.server) as client:
        result = await client.call_tool("get_memory", {"memory_id": arabic})
    assert result.is_error and "is not a memory id" in str(result.content)


async def test_a_forged_link_puts_no_unrelated_memory_first(capped: InProcess) -> None:
    """Before, a line's `superseded_by` naming a stored memory put that memory first in a search
    for the line's own subject, at the same score; one naming nothing was kept as it was."""
    async with Client(capped.server) as client, capped.http() as http:
        stored = await client.call_tool("store_memory", {"content": "Favourite pizza topping is pineapple."})
        victim = (stored.structured_content or {})["memory_id"]
        lines = [
            HEADER_2,
            line(11, "The winter tyres are stored in the garage loft.", {"superseded_by": victim}),
            line(12, "The spare house key is with the neighbour Ines.", {"superseded_by": mid(99)}),
            line(13, "Pizza on Fridays comes from Luigi's.", {"supersedes": victim}),
            line(14, "Badminton is on Mondays at the sports hall.", {"superseded_by": mid(15)}),
            line(15, "Badminton moved to Tuesdays at the sports hall.", {"supersedes": mid(14)}),
        ]
        report = await (await InProcessConsole.open(http)).run(("\n".join(lines) + "\n").encode())
        assert report["state"] == "done" and report["added"] == 5, report
        results = await client.call_tool("search_memory", {"query": "where are the winter tyres?"})
        found = [r["memory_id"] for r in (results.structured_content or {})["results"]]
        moved = await client.call_tool("get_memory", {"memory_id": mid(14)})
        pizza = await client.call_tool("get_memory", {"memory_id": victim})
    assert found[0] == mid(11) and victim not in found, found
    assert (moved.structured_content or {}).get("superseded_by") == mid(15)  # the pair that agrees is kept
    assert (pizza.structured_content or {}).get("supersedes") is None
    assert report["links_dropped"] == 3 and report["links_added"] == 1, report


async def import_text(runtime: Runtime, text: str, dry_run: bool = False) -> ImportReport:
    return await Importer(runtime.engine.bulk, None, dry_run=dry_run).run(io.BytesIO(text.encode("utf-8")))


async def all_memories(runtime: Runtime) -> dict[str, StoredMemory]:
    bulk = runtime.engine.bulk
    return await bulk.fetch(await bulk.ids_oldest_first())


def torn(memories: dict[str, StoredMemory]) -> list[str]:
    """Links pointing at nothing, and `superseded_by` links the other end does not hold."""
    wrong = []
    for m in memories.values():
        for other in (m.supersedes, m.superseded_by):
            if other and other not in memories:
                wrong.append(f"{m.memory_id} -> missing {other}")
        if m.superseded_by in memories:
            first = memories[m.superseded_by]
            named = memories.get(first.supersedes or "")
            if first.supersedes != m.memory_id and (named is None or named.superseded_by != first.memory_id):
                wrong.append(f"{m.memory_id} -> {first.memory_id}, which does not name it back")
    return wrong


async def test_links_across_batches_and_several_replaced_are_kept(runtime: Runtime) -> None:
    """A link whose ends are batches apart, a memory replacing two (naming the latest), a dry run
    that counts as the run does, and a second import that adds nothing."""
    fillers = [line(100 + n, f"Filler note number {n} about nothing in particular.") for n in range(BATCH + 10)]
    lines = [
        HEADER_2,
        line(1, "Team lead is Priya Nair.", {"superseded_by": mid(2)}),
        line(3, "Favourite typeface is Futura.", {"superseded_by": mid(5), "kind": "duplicate"}),
        *fillers,
        line(2, "Priya left; the new team lead is Tom Becker.", {"supersedes": mid(1)}),
        line(4, "Futura is my favourite typeface", {"superseded_by": mid(5), "kind": "duplicate", "kept": True}),
        line(5, "Favourite typeface is Futura, the bold weight for headlines.", {"supersedes": mid(4)}),
    ]
    text = "\n".join(lines) + "\n"
    dry = await import_text(runtime, text, dry_run=True)
    assert (dry.added, dry.links_added, dry.links_dropped) == (len(fillers) + 5, 3, 0)
    report = await import_text(runtime, text)
    assert (report.added, report.links_added, report.links_dropped) == (len(fillers) + 5, 3, 0)
    memories = await all_memories(runtime)
    assert torn(memories) == []
    assert memories[mid(1)].superseded_by == mid(2) and memories[mid(2)].supersedes == mid(1)
    assert memories[mid(3)].superseded_by == mid(5) and memories[mid(4)].superseded_by == mid(5)
    assert memories[mid(4)].link_kept and memories[mid(5)].supersedes == mid(4)
    again = await import_text(runtime, text)
    assert (again.unchanged, again.links_added, again.links_dropped) == (len(fillers) + 5, 0, 0)


# One sentence, long enough that a batch takes a moment to store (the kill lands while one is); longer
# only made each batch, and the test, slower.
STORY = ", ".join(f"rule {i} of the club's locker rules read out at every meeting" for i in range(4))


def console_state(console: Console, job: str) -> tuple[str, int]:
    page = console.http.get(f"/import/{job}").text
    state = re.search(r'data-state="(\w+)"', page)
    percent = re.search(r"… (\d+) %", page)
    return (state.group(1) if state else "?"), int(percent.group(1)) if percent else 0


@pytest.mark.server("the process is the point: kill -9 in the middle of an import")
async def test_a_kill_mid_import_leaves_no_torn_link(tmp_path: Path, model_dir: Path) -> None:
    """300 replaced memories, then the 300 replacing them; the server killed with SIGKILL while the
    second half is read. Before, the first half's links pointed at memories never stored."""
    pairs = 300
    lines = [HEADER_2]
    lines += [
        line(n, f"Locker {n} holds the old racket number {n}. {STORY}", {"superseded_by": mid(pairs + n)})
        for n in range(pairs)
    ]
    lines += [
        line(pairs + n, f"Locker {n} now holds the new racket model {n * 7}. {STORY}", {"supersedes": mid(n)})
        for n in range(pairs)
    ]
    text = "\n".join(lines) + "\n"
    server = ServerProcess(tmp_path / "data").start()
    try:
        console = Console(server.base_url)
        job = console.upload(text.encode())
        assert console.http.post(f"/import/{job}/start", headers=console.csrf).status_code == 200
        deadline = time.monotonic() + 120
        while console_state(console, job)[1] < 60:  # the replaced ones written, the second half under way
            assert console_state(console, job)[0] in ("waiting", "running") and time.monotonic() < deadline
            time.sleep(0.02)
    finally:
        assert server.proc is not None
        server.proc.kill()  # SIGKILL: no shutdown
        server.proc.wait()
        server.stop()
    made = make_runtime(Settings(chromadb_path=tmp_path / "data", model_dir=model_dir, store_process=False))
    try:
        memories = await all_memories(made)
        print(f"\n{len(memories)} memories stored when killed")
        assert 0 < len(memories) < 2 * pairs and len(memories) % BATCH == 0, len(memories)  # whole batches
        assert torn(memories) == []
        report = await import_text(made, text)  # importing again completes what the kill cut short
        memories = await all_memories(made)
        assert len(memories) == 2 * pairs and torn(memories) == [] and report.links_added == pairs
        assert all(memories[mid(n)].superseded_by == mid(pairs + n) for n in range(pairs))
    finally:
        made.close()
