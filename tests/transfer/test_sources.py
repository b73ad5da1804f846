"""Imports from other programs, with fixtures their real releases wrote (tests/fixtures/make_*.py):
mcp-memory-service's database and JSON export, basic-memory's notes (folder, .zip, one note), a
pasted list; a second import adds nothing; a file of no format says which it accepts; a kill
mid-import leaves whole batches or none."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from symbiote.config import Settings
from symbiote.runtime import Runtime
from symbiote.transfer.exporting import export_lines
from symbiote.transfer.importing import BATCH, NOT_AN_EXPORT, NotAnExportError
from symbiote.transfer.sources import import_path, import_text
from tests.conftest import make_runtime

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SERVICE = FIXTURES / "memory-service"
NOTES = FIXTURES / "basic-memory"


async def stored(runtime: Runtime) -> list[dict[str, Any]]:
    lines = "".join([chunk async for chunk in export_lines(runtime.engine.bulk, None)]).splitlines()[1:]
    return [json.loads(line) for line in lines]


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(round(seconds * 1_000_000) / 1_000_000, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


async def test_memory_service_database_keeps_text_tags_type_times_and_leaves_the_deleted_out(
    runtime: Runtime, tmp_path: Path
) -> None:
    expected = json.loads((SERVICE / "expected.json").read_text())
    database = tmp_path / "sqlite_vec.db"
    shutil.copy(SERVICE / "sqlite_vec.db", database)
    report = await import_path(runtime.engine.bulk, database)
    assert (report.source, report.added, report.left_out, report.refused_count) == ("memory-service", 5, 1, 0)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("sqlite_vec")) == ["sqlite_vec.db"]
    memories = {m["content"]: m for m in await stored(runtime)}
    assert expected["deleted"] not in memories
    for want in expected["memories"]:
        got = memories[want["content"]]
        assert got["tags"] == want["tags"] and got["type"] == want["type"]
        assert got["created"] == _iso(want["created_at"])
        edited = want["content"] == expected["edited"]
        assert (got["updated"] is not None) == edited
        if edited:
            assert got["updated"] == _iso(want["updated_at"])
    again = await import_path(runtime.engine.bulk, database)
    assert (again.added, again.unchanged, again.updated) == (0, 5, 0)
    from_json = await import_path(runtime.engine.bulk, SERVICE / "export.json")
    assert (from_json.source, from_json.unit, from_json.added, from_json.unchanged) == ("memory-service", "entry", 0, 5)
    assert len(await stored(runtime)) == 5


async def test_memory_service_export_alone_gives_the_same_ids_as_its_database(tmp_path: Path, model_dir: Path) -> None:
    ids = []
    for name in ("export.json", "sqlite_vec.db"):
        made = make_runtime(Settings(chromadb_path=tmp_path / name, model_dir=model_dir, store_process=False))
        try:
            report = await import_path(made.engine.bulk, SERVICE / name)
            assert report.added == 5
            ids.append(sorted(m["id"] for m in await stored(made)))
        finally:
            made.close()
    assert ids[0] == ids[1]


def _want_from_notes() -> set[tuple[str, tuple[str, ...], str, str]]:
    """What basic-memory's own parser read, as the memories it should become."""
    want = set()
    for note in json.loads((FIXTURES / "basic-memory.expected.json").read_text())["notes"]:
        title, where = note["title"], f"basic-memory:{note['permalink']}"
        for o in note["observations"]:
            text = " ".join(w for w in o["content"].split() if not w.startswith("#"))
            if o["context"]:
                text += f" ({o['context']})"
            tags = ([o["category"]] if o["category"] else []) + o["tags"] + [title]
            want.add((f"{title}: {text}", tuple(tags), "fact", where))
        for r in note["relations"]:
            want.add((f"{title} {r['type']} {r['target']}", (title, r["target"]), "relation", where))
    return want


@pytest.mark.slow
async def test_basic_memory_notes_become_observations_and_relations_and_a_second_import_adds_nothing(
    runtime: Runtime, tmp_path: Path
) -> None:
    want = _want_from_notes()
    report = await import_path(runtime.engine.bulk, NOTES)
    assert (report.source, report.added, report.refused_count) == ("basic-memory", len(want), 0)
    got = {(m["content"], tuple(m["tags"]), m["type"], m["metadata"]["conversation_id"]) for m in await stored(runtime)}
    assert got == want
    archive = tmp_path / "notes.zip"
    with zipfile.ZipFile(archive, "w") as out:
        for path in NOTES.rglob("*.md"):
            out.write(path, path.relative_to(NOTES).as_posix())
    for again in (NOTES, archive, NOTES / "food" / "Coffee Brewing.md"):
        report = await import_path(runtime.engine.bulk, again)
        assert report.added == 0 and report.unchanged > 0, again


PASTED = """Here is what I remember about you:

- Lives in Lyon with a cat called Miso
- Prefers answers in British English
* Is training for a half marathon in April,
  three runs a week
1. Works as a data engineer at a logistics firm

## Work
• Uses dbt and Airflow every day
Allergic to peanuts
"""


async def test_a_pasted_list_one_memory_per_line_or_bullet_tagged_and_previewed(runtime: Runtime) -> None:
    preview = await import_text(runtime.engine.bulk, PASTED, "pasted-test", dry_run=True)
    assert (preview.added, preview.refused_count) == (6, 2)
    assert await stored(runtime) == []  # the preview stores nothing
    report = await import_text(runtime.engine.bulk, PASTED, "pasted-test")
    assert (report.added, report.refused) == (6, [(1, "a heading, not a memory"), (9, "a heading, not a memory")])
    memories = {m["content"]: m["tags"] for m in await stored(runtime)}
    assert memories["Is training for a half marathon in April, three runs a week"] == ["pasted-test"]
    assert "Allergic to peanuts" in memories and "Uses dbt and Airflow every day" in memories
    again = await import_text(runtime.engine.bulk, PASTED, "pasted-other")
    assert (again.added, again.unchanged) == (0, 6)


async def test_a_file_of_no_format_says_which_formats_it_accepts(runtime: Runtime, tmp_path: Path) -> None:
    for name, body in [
        ("notes.txt", b"just some text\nand more\n"),
        ("data.csv", b"a,b\n1,2\n"),
        ("x.json", b"{\n}\n"),
    ]:
        path = tmp_path / name
        path.write_bytes(body)
        with pytest.raises(NotAnExportError) as refused:
            await import_path(runtime.engine.bulk, path)
        assert str(refused.value) == NOT_AN_EXPORT and "mcp-memory-service" in NOT_AN_EXPORT
    assert await stored(runtime) == []


@pytest.mark.slow
def test_a_killed_import_leaves_whole_batches_or_none(tmp_path: Path, model_dir: Path) -> None:
    """`symbiote import --text` killed with SIGKILL part way: what is stored is whole batches of the
    list, each memory's text whole."""
    lines = [f"Kill test memory {i}: the lighthouse keeper logged storm number {i} at dawn." for i in range(4 * BATCH)]
    paste = tmp_path / "paste.txt"
    paste.write_text("\n".join(lines) + "\n")
    data = tmp_path / "data"
    env = {**os.environ, "CHROMADB_PATH": str(data), "SYMBIOTE_MODEL_DIR": str(model_dir)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "symbiote", "import", "--text", str(paste), "--tag", "killed"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:  # killed once a batch or more is in
        if sum(f.stat().st_size for f in data.rglob("*") if f.is_file()) > 3_000_000:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    import asyncio

    made = make_runtime(Settings(chromadb_path=data, model_dir=model_dir, store_process=False))
    try:
        memories = asyncio.run(stored(made))
    finally:
        made.close()
    assert len(memories) % BATCH == 0, f"{len(memories)} stored: a torn batch"
    assert {m["content"] for m in memories} <= set(lines)
    print(f"killed after {len(memories)} of {len(lines)} memories (whole batches of {BATCH})")


# -- issue 58: an import keeps every entry, and --replace replaces only the entry with that id ------


def _big_note(folder: Path, observations: int) -> Path:
    """One basic-memory note of `observations` observations (one modification time for all of them)."""
    folder.mkdir()
    lines = "\n".join(
        f"- [fact] Observation {n} of the long note is its own fact #n{n % 7}" for n in range(observations)
    )
    note = folder / "Long Note.md"
    note.write_text(f"---\ntitle: Long Note\npermalink: long-note\n---\n\n# Long Note\n\n{lines}\n")
    os.utime(note, (1_780_000_000, 1_780_000_000))
    return folder


@pytest.mark.slow
async def test_a_note_of_many_observations_imports_whole_and_again_adds_nothing(
    runtime: Runtime, tmp_path: Path
) -> None:
    notes = _big_note(tmp_path / "notes", 2 * BATCH + 100)  # 600: edb1c0f kept 586-587, then overwrote others
    first = await import_path(runtime.engine.bulk, notes)
    assert (first.added, first.conflicts, first.refused_count) == (600, 0, 0)
    ids = sorted(m["id"] for m in await stored(runtime))
    assert len(set(ids)) == 600
    again = await import_path(runtime.engine.bulk, notes)
    assert (again.added, again.unchanged, again.conflicts) == (0, 600, 0)
    replaced = await import_path(runtime.engine.bulk, notes, replace=True)  # the console's "replace conflicts"
    assert (replaced.added, replaced.unchanged, replaced.replaced) == (0, 600, 0)
    after = await stored(runtime)
    assert sorted(m["id"] for m in after) == ids and len({m["content"] for m in after}) == 600


def test_the_ids_an_import_makes_for_a_note_of_20000_observations_are_distinct_and_stable() -> None:
    from symbiote.transfer.basic_memory import note_items
    from symbiote.transfer.export_format import read_memory
    from symbiote.transfer.importing import made_id

    raw = "\n".join(f"- [fact] Observation {n} #tag" for n in range(20_000)).encode()

    def ids() -> list[str]:
        items = note_items("Long Note.md", raw, 1_780_000_000_000_000, 1)
        return [made_id(read_memory(item.record or {}, 2**62, None, 10_000).memory, 0) for item in items]

    made = ids()
    assert len(made) == 20_000 and len(set(made)) == 20_000 and ids() == made
