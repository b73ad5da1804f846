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

import json
import math
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from symbiote.errors import InvalidInputError
from symbiote.memory import iso_utc, validation
from symbiote.transfer.importing import SourceItem
from symbiote.transfer.knowledge_graph import as_tags

SQLITE_MAGIC = b"SQLite format 3\x00"
MAX_JSON_BYTES = 256 * 1024 * 1024  # a JSON export is read whole; a larger one is refused (use its database)
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
    except ValueError as exc:
        return SourceItem(number, refused=str(exc))


def database_items(path: Path, left_out: list[int]) -> Iterator[SourceItem]:
    """Every live row of its database, read-only, numbered by the row's id; `left_out` gets the
    number of deleted rows."""
    # a database with no write-ahead log beside it (its server stopped, or an uploaded copy) is read
    # as immutable, so reading it leaves no -shm or -wal file behind; a live one read-only
    live = Path(f"{path}-wal").exists()
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?{'mode=ro' if live else 'immutable=1'}", uri=True)
    except sqlite3.Error as exc:
        raise NotMemoryServiceError(f"The database cannot be opened ({exc}).") from exc
    try:
        columns = {row[1] for row in db.execute("PRAGMA table_info(memories)")}
        if not _COLUMNS <= columns:
            raise NotMemoryServiceError("This SQLite database is not one of mcp-memory-service (no memories table).")
        deleted = "deleted_at IS NOT NULL" if "deleted_at" in columns else "0"
        store = "store" if "store" in columns else "'default'"
        left_out.append(db.execute(f"SELECT count(*) FROM memories WHERE {deleted}").fetchone()[0])
        cursor = db.execute(
            f"SELECT id, content, content_hash, tags, memory_type, created_at, updated_at, {store} "  # fixed names
            f"FROM memories WHERE NOT ({deleted}) ORDER BY created_at, id"
        )
        names = ("content", "content_hash", "tags", "memory_type", "created_at", "updated_at", "store")
        while rows := cursor.fetchmany(READ_ROWS):
            for row in rows:
                yield _item(int(row[0]), dict(zip(names, row[1:])))
    except sqlite3.DatabaseError as exc:
        raise NotMemoryServiceError(f"The database cannot be read ({exc}).") from exc
    finally:
        db.close()


def read_export(stream: IO[bytes]) -> Any:
    """A JSON document read whole (at most MAX_JSON_BYTES); None when it is not JSON."""
    data = stream.read(MAX_JSON_BYTES + 1)
    if len(data) > MAX_JSON_BYTES:
        raise InvalidInputError(
            f"A JSON export over {MAX_JSON_BYTES // (1024 * 1024)} MiB is not read: import mcp-memory-service's "
            "database file instead."
        )
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        return None


def export_items(document: dict[str, Any]) -> Iterator[SourceItem]:
    """Every memory of its JSON export, numbered by its place in the file's list."""
    for number, entry in enumerate(document["memories"], start=1):
        if not isinstance(entry, dict):
            yield SourceItem(number, refused="not a JSON object")
        elif entry.get("deleted_at") is not None:
            continue
        else:
            yield _item(number, entry)
