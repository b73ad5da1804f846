"""The reader of another program's file (`symbiote.transfer.source_reader`), run here in the test's
process on files an owner may be handed: what it tells the server, line by line. A file refused
whole says why; one bad entry, row or note is refused alone, by number and reason, and the rest is
read; a file that breaks off mid-way stops with what was read before.

The same reader runs in a process of its own under an import (tests/transfer/test_hostile_files.py
and test_reader_fuzz.py drive it through a server)."""

from __future__ import annotations

import io
import json
import os
import sqlite3
import zipfile
from pathlib import Path
from typing import Any

import pytest

from symbiote.transfer import memory_service
from symbiote.transfer.basic_memory import MAX_LINE_CHARS, MAX_NOTE_BYTES
from symbiote.transfer.importing import NOT_AN_EXPORT
from symbiote.transfer.source_reader import RUN, read

MAX_BYTES = 10_000
HASH = "0123456789abcdef" * 4


def told(path: Path, max_bytes: int = MAX_BYTES) -> list[dict[str, Any]]:
    out = io.StringIO()
    read(path, max_bytes, out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def refusals(lines: list[dict[str, Any]]) -> dict[int, str]:
    return {line["n"]: line["x"] for line in lines if "x" in line}


def records(lines: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    return {line["n"]: line["r"] for line in lines if "r" in line}


def export(path: Path, entries: list[Any]) -> Path:
    path.write_text(json.dumps({"export_metadata": {"source": "test"}, "memories": entries}, indent=2))
    return path


def entry(i: int, **changes: Any) -> dict[str, Any]:
    return {
        "content": f"Entry {i}: the kayak is stored under the deck.",
        "content_hash": f"{i:08x}" + HASH[8:],
        "tags": ["boats"],
        "memory_type": "note",
        "created_at": 1_700_000_000.0 + i,
        "updated_at": 1_700_000_000.0 + i,
        **changes,
    }


def test_each_bad_entry_of_a_memory_service_export_is_refused_alone_with_its_reason(tmp_path: Path) -> None:
    path = export(
        tmp_path / "export.json",
        [
            entry(1),
            "a string",
            entry(3, content="   "),
            entry(4, deleted_at=1_700_000_100.0),
            entry(5, content="x" * (MAX_BYTES + 1)),
            entry(6, content_hash="not-hex"),
            entry(7, tags=[1, 2]),
            entry(8, created_at="yesterday"),
            entry(9, created_at=1e300),
            entry(10, tags="boats,river", store="garage", memory_type="two words"),
            entry(11, memory_type="checklist"),
        ],
    )
    lines = told(path)
    assert lines[0] == {"source": "memory-service", "unit": "entry"} and lines[-1] == {"end": True, "left_out": 0}
    assert refusals(lines) == {
        2: "not a JSON object",
        3: "no text",
        5: f"text longer than {MAX_BYTES:,} bytes (not read)",
        6: "no content hash",
        7: "tags are not text",
        8: "created_at is not a time",
        9: "a time out of range",
    }
    got = records(lines)
    assert sorted(got) == [1, 10, 11]  # the deleted entry 4 is left out, not refused
    assert got[10]["tags"] == ["boats", "river", "garage"] and "type" not in got[10]  # a type Symbiote refuses
    assert got[11]["type"] == "checklist" and got[1]["content"] == "Entry 1: the kayak is stored under the deck."


def test_an_export_that_breaks_off_stops_after_what_was_read(tmp_path: Path) -> None:
    whole = json.dumps({"export_metadata": {}, "memories": [entry(1), entry(2)]}, indent=2)
    path = tmp_path / "cut.json"
    path.write_text(whole[: whole.index('"content"', whole.index("Entry 2") - 200)])
    lines = told(path)
    assert [line["n"] for line in lines if "r" in line] == [1]
    assert lines[-1]["stop"].startswith("The JSON export is not valid JSON after entry 1 ")


@pytest.mark.parametrize(
    "text",
    [
        '{\n  "export_metadata": {},\n  "count": 2\n}\n',  # no memories
        '{\n  "export_metadata": {\n  "source": "cut',  # broken off before its memories
        '{\n  "memories": []\n}\n',  # memories without the exporter's metadata
    ],
)
def test_a_json_document_not_shaped_as_the_exporter_writes_is_refused_whole(tmp_path: Path, text: str) -> None:
    path = tmp_path / "document.json"
    path.write_text(text)
    assert told(path) == [{"refused": NOT_AN_EXPORT, "whole": True}]


def test_refusals_in_a_row_are_told_in_runs_the_server_can_take(tmp_path: Path) -> None:
    # a large export of empty objects: every one refused, told in a handful of lines
    path = tmp_path / "empty.json"
    path.write_text('{"export_metadata": {}, "memories": [' + ",".join(["{}"] * (RUN + 5)) + "]}")
    lines = told(path)
    assert lines[1:-1] == [{"n": 1, "x": "no text", "k": RUN}, {"n": RUN + 1, "x": "no text", "k": 5}]
    assert lines[-1] == {"end": True, "left_out": 0}


def database(path: Path, schema: str) -> Path:
    db = sqlite3.connect(path)
    db.executescript(schema)
    db.commit()
    db.close()
    return path


@pytest.mark.parametrize(
    ("schema", "why"),
    [
        ("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);", "no memories table"),
        ("CREATE TABLE memories (id INTEGER PRIMARY KEY, content TEXT);", "no memories table"),
        ("CREATE TABLE t (x); CREATE VIEW memories AS SELECT x AS content FROM t;", "memories is a view"),
        (
            "CREATE TABLE memories (id INTEGER PRIMARY KEY, seed TEXT, content TEXT GENERATED ALWAYS AS (seed) "
            "VIRTUAL, content_hash TEXT, tags TEXT, memory_type TEXT, created_at REAL, updated_at REAL);",
            "computes columns",
        ),
    ],
)
def test_a_database_that_is_not_mcp_memory_services_is_refused_whole(tmp_path: Path, schema: str, why: str) -> None:
    (line,) = told(database(tmp_path / "other.db", schema))
    assert why in line["refused"] and "whole" not in line


def test_a_damaged_database_is_refused_with_the_reason(tmp_path: Path) -> None:
    path = tmp_path / "damaged.db"
    path.write_bytes(memory_service.SQLITE_MAGIC + b"\xff" * 4000)
    (line,) = told(path)
    assert line["refused"].startswith("The database cannot be read (")


def note(text: str) -> bytes:
    return ("---\ntitle: 'Boat''s log'\npermalink: \"boats/log\"\n---\n" + text).encode()


def test_a_note_reads_its_observations_and_relations_and_leaves_other_bullets(tmp_path: Path) -> None:
    body = "\n".join(
        [
            "- [fact] The kayak is stored under the deck #boats",
            "- #boats",  # tags and no text: nothing to remember
            "- rel[x] [[Harbour]]",  # a relation's type with a bracket: not one
            "- moored_at [[Pier 4]] on weekdays",  # text after the target that is not a context: not one
            "- moored_at [[Pier 5]] (summer)",
            "- [note] " + "long " * (MAX_LINE_CHARS // 5 + 1),
            "- [note] The oars hang in the shed",
        ]
    )
    path = tmp_path / "log.md"
    path.write_bytes(note(body))
    lines = told(path)
    assert lines[0] == {"source": "basic-memory", "unit": "line"}
    got = records(lines)
    assert [(r["content"], r.get("metadata")) for r in got.values()] == [
        ("Boat's log: The kayak is stored under the deck", {"conversation_id": "basic-memory:boats/log"}),
        ("Boat's log moored_at Pier 5", {"conversation_id": "basic-memory:boats/log"}),
        ("Boat's log: The oars hang in the shed", {"conversation_id": "basic-memory:boats/log"}),
    ]
    assert [line["w"] for line in lines if "r" in line] == ["log.md line 5", "log.md line 9", "log.md line 11"]


def test_a_note_too_large_or_not_text_is_refused_alone_and_the_others_read(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_bytes(b"---\ntitle: a\n---\n- [fact] caf\xe9 in Latin-1\n")
    with (folder / "b.md").open("wb") as handle:  # sparse: nothing of it is written or read
        handle.write(b"---\n")
        handle.truncate(MAX_NOTE_BYTES + 1)
    (folder / "c.md").write_bytes(note("- [fact] The sail is blue\n"))
    lines = told(folder)
    assert refusals(lines) == {1: "a.md: not text (not UTF-8)", 2: "b.md: larger than 4 MiB (not read)"}
    assert [r["content"] for r in records(lines).values()] == ["Boat's log: The sail is blue"]
    alone = told(folder / "b.md")
    assert refusals(alone) == {1: "b.md: larger than 4 MiB (not read)"} and alone[-1]["end"] is True


def test_a_damaged_or_too_large_entry_of_a_zip_is_refused_alone(tmp_path: Path) -> None:
    path = tmp_path / "notes.zip"
    sound = note("- [fact] The anchor is in the locker\n")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("a.md", note("- [fact] " + "The rope is coiled. " * 200))
        archive.writestr("b.md", b"---\n" + b"\0" * MAX_NOTE_BYTES)  # compresses to a few KB
        archive.writestr("c.md", sound)
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        first = archive.getinfo("a.md")
        start = first.header_offset + 30 + len(first.filename) + len(first.extra)
    data[start + 10 : start + 40] = os.urandom(30)  # a.md's compressed bytes damaged
    path.write_bytes(bytes(data))
    lines = told(path)
    refused = refusals(lines)
    assert refused[1].startswith("a.md: cannot be read (") and refused[2] == "b.md: larger than 4 MiB (not read)"
    assert [r["content"] for r in records(lines).values()] == ["Boat's log: The anchor is in the locker"]


def test_a_zip_entry_whose_name_holds_a_nul_is_refused_by_name_not_dropped(tmp_path: Path) -> None:
    """zipfile cuts a name at a NUL ("a\\0b.md" reads as "a"), which would hide the note as no note."""
    path = tmp_path / "notes.zip"
    with zipfile.ZipFile(path, "w") as archive:  # written with \x01, then set to NUL: zipfile writes no NUL
        archive.writestr("a\x01b.md", note("- [fact] The mast is new\n"))
        archive.writestr("logs/\x01.md", note("- [fact] The keel is sound\n"))
        archive.writestr("c.md", note("- [fact] The anchor is in the locker\n"))
    path.write_bytes(path.read_bytes().replace(b"a\x01b", b"a\x00b").replace(b"/\x01", b"/\x00"))
    lines = told(path)
    assert refusals(lines) == {
        1: "a\\x00b.md: its name holds a NUL byte (not read)",
        3: "logs/\\x00.md: its name holds a NUL byte (not read)",
    }
    assert [r["content"] for r in records(lines).values()] == ["Boat's log: The anchor is in the locker"]


def test_a_file_that_is_no_zip_nor_regular_is_refused_whole(tmp_path: Path) -> None:
    path = tmp_path / "fake.zip"
    path.write_bytes(b"PK\x03\x04" + b"\0" * 100)
    assert told(path) == [{"refused": "This .zip cannot be read, so nothing was imported.", "whole": True}]
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert told(fifo) == [{"refused": "pipe is not a regular file, so nothing was imported."}]


def test_a_zip_whose_directory_is_damaged_stops_with_the_reason(tmp_path: Path) -> None:
    path = tmp_path / "notes.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("a.md", note("- [fact] The anchor is in the locker\n"))
    data = path.read_bytes()
    at = data.rindex(b"PK\x01\x02")  # the central directory's entry: its signature broken
    path.write_bytes(data[:at] + b"XX\x01\x02" + data[at + 4 :])
    lines = told(path)
    assert lines[0] == {"source": "basic-memory", "unit": "line"}
    assert lines[-1]["stop"].startswith("The file could not be read (BadZipFile: ") and len(lines) == 2


def test_a_database_row_without_text_or_too_long_is_refused_alone_and_deleted_rows_left_out(tmp_path: Path) -> None:
    path = database(
        tmp_path / "sqlite_vec.db",
        "CREATE TABLE memories (id INTEGER PRIMARY KEY, content TEXT, content_hash TEXT, tags TEXT, "
        "memory_type TEXT, created_at REAL, updated_at REAL, deleted_at REAL);",
    )
    db = sqlite3.connect(path)
    rows = [
        (1, "The kayak is stored under the deck.", None),
        (2, None, None),
        (3, "y" * (MAX_BYTES + 1), None),
        (4, "A deleted memory", 1_700_000_500.0),
    ]
    db.executemany(
        "INSERT INTO memories VALUES (?, ?, ?, 'boats', 'note', 1700000000.0, 1700000000.0, ?)",
        [(i, text, HASH, deleted) for i, text, deleted in rows],
    )
    db.commit()
    db.close()
    lines = told(path)
    assert lines[0] == {"source": "memory-service", "unit": "row"} and lines[-1] == {"end": True, "left_out": 1}
    assert refusals(lines) == {2: "no text", 3: f"text longer than {MAX_BYTES:,} bytes (not read)"}
    assert [r["content"] for r in records(lines).values()] == ["The kayak is stored under the deck."]
