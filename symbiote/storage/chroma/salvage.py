"""Reading the primary rows out of a damaged side database (`symbiote.storage.chroma.side_database`).

The keyword index in that file is derived from Chroma and rebuilt; the write-behind journal, the
trash and the moves under way are not, and live nowhere else. Before a damaged file is set aside,
every row of theirs SQLite can still read is read: a table at once, or, when a damaged page stops
that, row by row through its rowids. What could not be read is said, so the store reports it (and
where the file was set aside) rather than open as if nothing were lost.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from symbiote.storage.chroma.side_database import SideDatabase

log = logging.getLogger(__name__)

PRIMARY_TABLES = ("unwritten", "unlinked", "set_aside", "trash", "moving")
ROW_BY_ROW_AT_MOST = 1_000_000  # rowids tried one by one in a table a damaged page stops


@dataclass
class Salvage:
    """The primary rows read out of a damaged file: by table, its columns and rows."""

    tables: dict[str, tuple[list[str], list[tuple[Any, ...]]]] = field(default_factory=dict)
    unread: list[str] = field(default_factory=list)  # what could not be read, in words

    def count(self, table: str) -> int:
        return len(self.tables.get(table, ([], []))[1])


def salvage(path: Path) -> Salvage:
    """Every primary row readable in the side database at `path` (opened read-only, not changed)."""
    found = Salvage()
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None)
    except sqlite3.Error as exc:
        found.unread.append(f"the whole file ({exc})")
        return found
    try:
        for table in PRIMARY_TABLES:
            try:
                columns = [str(row[1]) for row in conn.execute(f"PRAGMA table_info({table})")]
            except sqlite3.DatabaseError as exc:  # the schema itself is damaged
                found.unread.append(f"the {table} table ({exc})")
                continue
            if not columns:
                continue  # a file from before the table existed
            _read(conn, table, columns, found)
    finally:
        conn.close()
    return found


def _read(conn: sqlite3.Connection, table: str, columns: list[str], found: Salvage) -> None:
    listed = ", ".join(columns)
    try:
        found.tables[table] = (columns, conn.execute(f"SELECT {listed} FROM {table}").fetchall())
        return
    except sqlite3.DatabaseError as exc:
        log.warning("the %s table of a damaged side database is read row by row (%s)", table, exc)
    rows: list[tuple[Any, ...]] = []
    try:
        top = int(conn.execute(f"SELECT max(rowid) FROM {table}").fetchone()[0] or 0)
    except sqlite3.DatabaseError as exc:
        found.tables[table] = (columns, rows)
        found.unread.append(f"the {table} table ({exc})")
        return
    unreadable = 0
    for rowid in range(1, min(top, ROW_BY_ROW_AT_MOST) + 1):
        try:
            row = conn.execute(f"SELECT {listed} FROM {table} WHERE rowid = ?", (rowid,)).fetchone()
        except sqlite3.DatabaseError:
            unreadable += 1
            continue
        if row is not None:
            rows.append(row)
    found.tables[table] = (columns, rows)
    if unreadable or top > ROW_BY_ROW_AT_MOST:
        found.unread.append(f"part of the {table} table ({len(rows)} rows read, {unreadable} places unreadable)")


def set_aside_and_recover(path: Path) -> SideDatabase:
    """The side database at `path` is damaged: read its primary rows, move it (with its WAL) aside
    beside itself, and open a new one holding those rows; its keyword index is rebuilt from Chroma
    by the store. What could not be read is noted in the new file (`SideDatabase.losses`)."""
    from symbiote.storage.chroma.side_database import SideDatabase

    kept = salvage(path)
    aside = path.with_name(f"{path.name}.damaged-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}")
    for suffix in ("", "-wal", "-shm"):  # the WAL keeps its pairing: the copy opens with what it held
        damaged = path.with_name(path.name + suffix)
        if damaged.exists():
            damaged.rename(aside.with_name(aside.name + suffix))
    index = SideDatabase(path)
    for table, (columns, rows) in kept.tables.items():
        if rows:
            index.put_back(table, columns, rows)
    recovered = ", ".join(f"{kept.count(table)} {table}" for table in PRIMARY_TABLES if kept.count(table))
    if kept.unread:
        index.note_loss(aside.name, "; ".join(kept.unread))
        log.error(
            "the side database was damaged; set aside as %s. Recovered from it: %s; NOT recovered: %s. "
            "The keyword index is rebuilt from Chroma",
            aside,
            recovered or "nothing",
            "; ".join(kept.unread),
        )
    else:
        log.warning(
            "the side database was damaged; set aside as %s. Its journal and trash were recovered whole (%s); "
            "the keyword index is rebuilt from Chroma",
            aside,
            recovered or "they were empty",
        )
    return index
