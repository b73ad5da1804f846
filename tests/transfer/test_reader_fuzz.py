"""Issue 49: a fuzz of the three readers of other programs' files (hypothesis), each file built from
hostile pieces (deep, wide, long, recursive, malformed) and imported through a real server's console.
For every file: `/health` answers within 1 s throughout, the server grows by at most 200 MB, and the
import ends with a result or a refusal (never a stuck or lost import). Twelve files of each reader
under `--soak`, four in a run of the suite, drawn with the run's seed (tests/conftest.py: volume)."""

from __future__ import annotations

import io
import json
import sqlite3
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from tests.conftest import ServerProcess, volume
from tests.hardening.test_servers import rss_mib
from tests.transfer.conftest import IMPORTING
from tests.transfer.test_hostile_files import imported

# A failing example's repr runs to megabytes: hypothesis' warning about it must not hide the failure.
pytestmark = [pytest.mark.volume, pytest.mark.filterwarnings("ignore:Generating overly large repr")]
DRAWN = volume(12, 4, __name__)


def fuzzed(test: Any) -> Any:
    """Hypothesis' settings for a fuzz of this module: the volume's count, drawn from its seed."""
    return seed(DRAWN.seed)(
        settings(
            max_examples=DRAWN.count,
            deadline=None,
            suppress_health_check=[HealthCheck.function_scoped_fixture],
            database=None,
        )(test)
    )


# Pieces a note or a text is made of: what the parsers look for, and runs of them.
PIECE = st.sampled_from(
    [
        "---",
        "\n",
        "- ",
        "* ",
        "[fact] ",
        "[[",
        "]]",
        "(",
        ")",
        "#",
        "#tag ",
        " ",
        "\t",
        "title: x\n",
        "[x] ",
        "é",
        "\x1b[2J",
    ]
)
TEXT = st.builds(
    lambda parts, times: "".join(p * t for p, t in zip(parts, times))[:300_000],
    st.lists(PIECE, min_size=1, max_size=12),
    st.lists(st.sampled_from([1, 2, 50, 5_000, 200_000]), min_size=12, max_size=12),
)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=False) | st.integers() | TEXT,
    lambda children: (
        st.lists(children, max_size=5)
        | st.dictionaries(
            st.sampled_from(
                [
                    "content",
                    "content_hash",
                    "tags",
                    "created_at",
                    "updated_at",
                    "memory_type",
                    "store",
                    "deleted_at",
                    "x",
                ]
            ),
            children,
            max_size=7,
        )
    ),
    max_leaves=30,
)


def _check(server: ServerProcess, data: bytes) -> None:
    assert server.proc is not None
    before = rss_mib(server.proc.pid)
    result = imported(server, data, seconds=180)
    assert result["state"] in ("done", "failed"), result
    assert rss_mib(server.proc.pid) - before < 200


@IMPORTING
@fuzzed
@given(
    kind=st.sampled_from(["table", "view", "without-rowid", "generated"]),
    rows=st.lists(
        st.tuples(JSON_VALUES, TEXT, st.one_of(st.floats(), st.text(max_size=20), st.binary(max_size=20)), TEXT),
        max_size=6,
    ),
    deep=st.integers(0, 3),
)
def test_fuzzed_databases(importing: ServerProcess, kind: str, rows: list[tuple[Any, ...]], deep: int) -> None:
    columns = "content TEXT, content_hash TEXT, tags TEXT, memory_type TEXT, created_at, updated_at, deleted_at"
    schema = {
        "table": f"CREATE TABLE memories (id INTEGER PRIMARY KEY, {columns});",
        "without-rowid": f"CREATE TABLE memories (id TEXT PRIMARY KEY, {columns}) WITHOUT ROWID;",
        "generated": f"CREATE TABLE memories (id INTEGER PRIMARY KEY, {columns}, g TEXT GENERATED ALWAYS AS (printf('%.*c', 100000, 'x')));",
        "view": "CREATE TABLE t (content TEXT); CREATE VIEW memories AS WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) "
        "SELECT n AS id, 'x' AS content, 'abcdef01' AS content_hash, '' AS tags, NULL AS memory_type, 1.0 AS created_at, "
        "NULL AS updated_at, NULL AS deleted_at FROM r;",
    }[kind]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzz.db"
        db = sqlite3.connect(path)
        db.executescript(schema)
        if kind != "view":
            for number, (content, tags, created, kind_text) in enumerate(rows):
                db.execute(
                    "INSERT INTO memories (id, content, content_hash, tags, memory_type, created_at, updated_at) VALUES (?,?,?,?,?,?,?)",
                    (
                        number if kind != "without-rowid" else f"r{number}",
                        json.dumps(content) * (1 + deep),
                        f"{number:064x}",
                        tags,
                        kind_text,
                        created,
                        created,
                    ),
                )
        db.commit()
        db.close()
        data = path.read_bytes()
    _check(importing, data)


@IMPORTING
@fuzzed
@given(
    entries=st.lists(JSON_VALUES, max_size=10),
    nesting=st.integers(0, 200_000),
    cut=st.integers(0, 64),
    metadata_first=st.booleans(),
)
def test_fuzzed_json_exports(
    importing: ServerProcess, entries: list[Any], nesting: int, cut: int, metadata_first: bool
) -> None:
    body = json.dumps(entries)
    if nesting:
        body = body[:-1] + ("," if entries else "") + "[" * nesting + "]" * nesting + "]"
    document = (
        '{"export_metadata": {}, "memories": ' + body + "}"
        if metadata_first
        else '{"memories": ' + body + ', "export_metadata": {}}'
    )
    data = document.encode("utf-8", "surrogatepass")
    if cut:
        data = data[: max(1, len(data) - cut)]
    _check(importing, data)


@IMPORTING
@fuzzed
@pytest.mark.filterwarnings("ignore:Duplicate name:UserWarning")  # the fuzz writes zips with repeated names on purpose
@given(
    notes=st.lists(st.tuples(st.text(min_size=1, max_size=30), TEXT), min_size=1, max_size=8),
    empty_entries=st.sampled_from([0, 10, 20_000]),
    encrypted=st.booleans(),
)
def test_fuzzed_zips_of_notes(
    importing: ServerProcess, notes: list[tuple[str, str]], empty_entries: int, encrypted: bool
) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in notes:
            # zipfile writes no NUL in a name (it cuts there); tests/transfer/test_source_reader.py reads one
            archive.writestr(name.replace("/", "_").replace("\0", "_") + ".md", text.encode("utf-8", "surrogatepass"))
        for i in range(empty_entries):
            archive.writestr(f"empty/{i}.md", b"")
    data = bytearray(buffer.getvalue())
    if encrypted:
        at = data.find(b"PK\x01\x02")
        if at >= 0:
            data[at + 8] |= 1
    _check(importing, bytes(data))
