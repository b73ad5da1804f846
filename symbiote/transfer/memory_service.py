"""mcp-memory-service's memories: its sqlite_vec database file, or the JSON its exporter writes.

Its `memories` table holds one row per memory: `content`, `content_hash` (SHA-256 of the text,
stripped and lower-cased), `tags` (comma-separated), `memory_type`, `metadata` (JSON),
`created_at` / `updated_at` (seconds as floats), `store` (a named partition, `default` unless the
owner made others) and `deleted_at` (a deleted memory stays as a tombstone until it is purged). Its
JSON export (`MemoryExporter.export_to_json`) holds the live ones as `{"export_metadata": ...,
"memories": [{content, content_hash, tags, created_at, updated_at, memory_type, metadata, store}]}`.

Each live memory becomes one memory with its text, tags (and its store's name when it is not
`default`), type and times; deleted rows are counted and left out. Its id is made from its creation
time and its content hash, so importing the same database or export again finds every memory
already stored under that id (unchanged) and adds nothing. Its vectors are not read: they come from
the model it was configured with, so the text is embedded again by Symbiote's. Its `metadata`, its
graph of associations and its quality scores are not carried over.
"""

from __future__ import annotations

import math
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import ijson

from symbiote.errors import InvalidInputError
from symbiote.memory import iso_utc, validation
from symbiote.transfer.importing import SourceItem
from symbiote.transfer.knowledge_graph import as_tags

SQLITE_MAGIC = b"SQLite format 3\x00"
READ_ROWS = 500  # rows read from the database at a time
_COLUMNS = {"content", "content_hash", "tags", "memory_type", "created_at", "updated_at"}
EDIT_SLACK_S = 0.001  # mcp-memory-service sets updated_at to created_at at a store: later than this is an edit


class NotMemoryServiceError(InvalidInputError):
    """A database that is not mcp-memory-service's (no `memories` table with its columns)."""


def is_memory_service_export(document: Any) -> bool:
    """Whether a JSON document is what mcp-memory-service's exporter writes."""
    return isinstance(document, dict) and "export_metadata" in document and isinstance(document.get("memories"), list)


def record_of(entry: dict[str, Any]) -> dict[str, Any]:
    """One of its memories (a row or an export's entry) as a memory record of the export format."""
    content = entry.get("content")
    digest = entry.get("content_hash")
    if not isinstance(content, str) or not content.strip():
        raise ValueError("no text")
    if not isinstance(digest, str) or len(digest) < 8 or any(c not in "0123456789abcdef" for c in digest[:8]):
        raise ValueError("no content hash")
    created = _seconds(entry.get("created_at"), "created_at")
    updated = _seconds(entry.get("updated_at"), "updated_at") if entry.get("updated_at") is not None else None
    created_us = round(created * 1_000_000)
    tags = entry.get("tags") or []
    if isinstance(tags, str):
        tags = tags.split(",")
    if not isinstance(tags, list) or not all(isinstance(tag, str) for tag in tags):
        raise ValueError("tags are not text")
    store = entry.get("store")
    if isinstance(store, str) and store.strip() and store != "default":
        tags = [*tags, store]
    record: dict[str, Any] = {
        # the same memory, imported again, has the same id: found stored, nothing added
        "id": f"mem_{created_us:016d}{int(digest[:8], 16) % 10_000:04d}",
        "content": content,
        "tags": as_tags(*tags),
        "created": iso_utc(created_us),
        "updated": iso_utc(round(updated * 1_000_000)) if updated and updated - created > EDIT_SLACK_S else None,
    }
    kind = entry.get("memory_type")
    if isinstance(kind, str):
        try:
            record["type"] = validation.memory_type(kind)
        except InvalidInputError:
            pass  # a type Symbiote's rules refuse (two words, too long): the memory comes without one
    return record


def _seconds(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} is not a time")
    return float(value)


def _item(number: int, entry: dict[str, Any]) -> SourceItem:
    try:
        return SourceItem(number, record_of(entry))
    except OverflowError:
        return SourceItem(number, refused="a time out of range")
    except ValueError as exc:
        return SourceItem(number, refused=str(exc))


_READABLE_TABLES = {"memories", "sqlite_master", "sqlite_schema"}
_FUNCTIONS = {"count", "length", "substr", "typeof"}
_PRAGMAS = {"table_xinfo"}
STALL_SECONDS = 30.0  # a statement that gives no row for this long is stopped (a database crafted to be slow)
HEAP_BYTES = 256 * 1024 * 1024  # SQLite's own memory for one database, at most
TAGS_CHARS = 64 * 1024  # of a row's tags, read at most (they are cut to 10 anyway)
_SHORT = 200  # characters read of a row's hash, type and store


def _authorizer(action: int, first: str | None, second: str | None, _db: str | None, _view: str | None) -> int:
    """Only what reading the memories needs: SELECT, reading `memories` and the schema, a few plain
    functions. A view, a recursive query, an attached file or any other function is denied."""
    if action == sqlite3.SQLITE_SELECT:
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_READ and first in _READABLE_TABLES:
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_FUNCTION and second in _FUNCTIONS:
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_PRAGMA and first in _PRAGMAS:
        return sqlite3.SQLITE_OK
    return sqlite3.SQLITE_DENY


class _Stall:
    """SQLite's progress handler: stops a statement that has given no row for STALL_SECONDS."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.touch()

    def touch(self) -> None:
        self.since = time.monotonic()

    def __call__(self) -> int:
        return 1 if time.monotonic() - self.since > self.seconds else 0


def _open(path: Path) -> sqlite3.Connection:
    # a database with no write-ahead log beside it (its server stopped, or an uploaded copy) is read
    # as immutable, so reading it leaves no -shm or -wal file behind; a live one read-only
    live = Path(f"{path}-wal").exists()
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?{'mode=ro' if live else 'immutable=1'}", uri=True)
        db.execute(f"PRAGMA hard_heap_limit={HEAP_BYTES}")
        db.execute("PRAGMA trusted_schema=OFF")
    except sqlite3.Error as exc:
        raise NotMemoryServiceError(f"The database cannot be opened ({exc}).") from exc
    db.set_authorizer(_authorizer)
    return db


def _columns(db: sqlite3.Connection) -> set[str]:
    """The columns of a real `memories` table; a view, a virtual table or a computed column is refused."""
    found = db.execute("SELECT type, sql FROM sqlite_master WHERE name = 'memories'").fetchall()
    if not found:
        raise NotMemoryServiceError("This SQLite database is not one of mcp-memory-service (no memories table).")
    kind, sql = found[0]
    if kind != "table" or str(sql or "").lstrip().upper().startswith("CREATE VIRTUAL"):
        raise NotMemoryServiceError(
            f"This database's memories is a {kind if kind != 'table' else 'virtual table'}, not a table of "
            "mcp-memory-service, so nothing was imported."
        )
    info = db.execute("PRAGMA table_xinfo(memories)").fetchall()
    if any(row[6] for row in info):  # hidden: computed (generated) columns, which mcp-memory-service never makes
        raise NotMemoryServiceError(
            "This database's memories table computes columns, which mcp-memory-service never does, so nothing was imported."
        )
    columns = {str(row[1]) for row in info}
    if not _COLUMNS <= columns:
        raise NotMemoryServiceError("This SQLite database is not one of mcp-memory-service (no memories table).")
    return columns


def database_items(
    path: Path, left_out: list[int], max_bytes: int, stall_seconds: float = STALL_SECONDS
) -> Iterator[SourceItem]:
    """Every live row of its database, read-only, numbered by the row's id (else its place); `left_out`
    gets the number of deleted rows. Only a real `memories` table is read, through an authorizer
    that allows nothing else (checked now, before a row is read); a text longer than `max_bytes` is
    refused in SQL before it is fetched, and every other field is read cut short."""
    db = _open(path)
    stall = _Stall(stall_seconds)
    db.set_progress_handler(stall, 10_000)
    try:
        with _read_errors(stall_seconds):
            columns = _columns(db)
            deleted = "deleted_at IS NOT NULL" if "deleted_at" in columns else "0"
            left_out.append(db.execute(f"SELECT count(*) FROM memories WHERE {deleted}").fetchone()[0])
    except BaseException:
        db.close()
        raise
    return _rows(db, stall, columns, max_bytes)


@contextmanager
def _read_errors(stall_seconds: float) -> Iterator[None]:
    try:
        yield
    except sqlite3.OperationalError as exc:
        if "interrupted" in str(exc):
            raise NotMemoryServiceError(
                f"Reading this database gave nothing for {stall_seconds:g} s, so it was stopped."
            ) from exc
        raise NotMemoryServiceError(f"The database cannot be read ({exc}).") from exc
    except sqlite3.DatabaseError as exc:
        raise NotMemoryServiceError(f"The database cannot be read ({exc}).") from exc


def _rows(db: sqlite3.Connection, stall: _Stall, columns: set[str], max_bytes: int) -> Iterator[SourceItem]:
    deleted = "deleted_at IS NOT NULL" if "deleted_at" in columns else "0"
    store = f"substr(store, 1, {_SHORT})" if "store" in columns else "'default'"
    try:
        with _read_errors(stall.seconds):
            stall.touch()
            cursor = db.execute(
                # fixed names and numbers only; a text is fetched only when it fits
                "SELECT CASE WHEN typeof(id) = 'integer' THEN id END, "
                f"CASE WHEN length(CAST(content AS BLOB)) <= {int(max_bytes)} THEN content END, "
                "length(CAST(content AS BLOB)), "
                f"substr(content_hash, 1, {_SHORT}), substr(tags, 1, {TAGS_CHARS}), "
                f"substr(memory_type, 1, {_SHORT}), "
                "CASE WHEN typeof(created_at) IN ('integer', 'real') THEN created_at END, "
                "CASE WHEN typeof(updated_at) IN ('integer', 'real') THEN updated_at END, "
                f"{store} FROM memories WHERE NOT ({deleted}) ORDER BY created_at, id"
            )
            names = ("content_hash", "tags", "memory_type", "created_at", "updated_at", "store")
            place = 0
            while rows := cursor.fetchmany(READ_ROWS):
                stall.touch()
                for row in rows:
                    place += 1
                    number = row[0] if isinstance(row[0], int) else place
                    if row[1] is None and row[2] is not None:
                        yield SourceItem(number, refused=f"text longer than {max_bytes:,} bytes (not read)")
                        continue
                    yield _item(number, {"content": row[1], **dict(zip(names, row[3:]))})
    finally:
        db.close()


def export_items(path: Path, max_bytes: int) -> Iterator[SourceItem] | None:
    """Every memory of its JSON export, numbered by its place in the file's list, read as a stream
    (ijson's C parser): one entry at a time is held, never the document. None when the document does
    not begin as the exporter writes it (`export_metadata`, then `memories`)."""
    with path.open("rb") as stream:
        metadata = False
        try:
            for prefix, event, value in ijson.parse(stream):
                if prefix == "" and event == "map_key" and value == "export_metadata":
                    metadata = True
                elif prefix == "memories" and event == "start_array":
                    break
                elif prefix == "" and event not in ("start_map", "map_key"):
                    return None  # a document of another shape
            else:
                return None
        except ijson.JSONError:
            return None
    return _entries(path, max_bytes) if metadata else None


def _entries(path: Path, max_bytes: int) -> Iterator[SourceItem]:
    number = 0
    with path.open("rb") as stream:
        try:
            for number, entry in enumerate(ijson.items(stream, "memories.item", use_float=True), start=1):
                if not isinstance(entry, dict):
                    yield SourceItem(number, refused="not a JSON object")
                elif not isinstance(entry.get("content"), str) or not entry["content"].strip():
                    yield SourceItem(number, refused="no text")  # without raising: millions of these cost seconds
                elif entry.get("deleted_at") is not None:
                    continue
                elif isinstance(entry.get("content"), str) and len(entry["content"].encode("utf-8")) > max_bytes:
                    yield SourceItem(number, refused=f"text longer than {max_bytes:,} bytes (not read)")
                else:
                    yield _item(number, entry)
        except ijson.JSONError as exc:
            raise InvalidInputError(f"The JSON export is not valid JSON after entry {number} ({exc}).") from exc
