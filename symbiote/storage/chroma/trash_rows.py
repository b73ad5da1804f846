"""The trash's rows, in the keyword index's SQLite file beside the memories' keyword entries.

A row holds everything a restore needs (the text, the Chroma metadata as JSON, the whole text's
vector) and when and by whom the memory was deleted. Kept in SQLite rather than a Chroma
collection: Chroma builds a vector index for every record added, which made moving 11,000
memories to the trash take 31 s; here it is a few inserts, listed in order of deletion by an
index. Its writes run inside the keyword index's transaction, so a memory leaves its keyword entry
and enters the trash together, after Chroma let it go.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class TrashRow:
    memory_id: str
    deleted_us: int
    deleted_by: str
    body: str
    meta: dict[str, Any]  # the memory's Chroma metadata
    vector: np.ndarray | None  # the whole text's; None when read for a listing


class TrashRows:
    """The `trash` table; its writes belong inside `LexicalIndex.transaction()` (the same connection)."""

    def __init__(self, conn: sqlite3.Connection, lock: threading.RLock) -> None:
        self._conn = conn
        self._lock = lock
        conn.execute(
            "CREATE TABLE IF NOT EXISTS trash (memory_id TEXT PRIMARY KEY, deleted_us INTEGER NOT NULL, "
            "deleted_by TEXT NOT NULL, body TEXT NOT NULL, meta TEXT NOT NULL, vector BLOB NOT NULL)"
        )
        conn.execute("CREATE INDEX IF NOT EXISTS trash_deleted ON trash(deleted_us, memory_id)")

    def put(self, rows: Sequence[TrashRow]) -> None:
        with self._lock:
            self._conn.executemany(
                "INSERT OR REPLACE INTO trash(memory_id, deleted_us, deleted_by, body, meta, vector) VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (
                        r.memory_id,
                        r.deleted_us,
                        r.deleted_by,
                        r.body,
                        json.dumps(r.meta),
                        np.asarray(r.vector, dtype=np.float32).tobytes(),
                    )
                    for r in rows
                ],
            )

    def remove(self, memory_ids: Sequence[str]) -> list[str]:
        """Delete these rows; returns the ids that were there."""
        with self._lock:
            present = [mid for mid in memory_ids if self._has(mid)]
            self._conn.executemany("DELETE FROM trash WHERE memory_id = ?", [(mid,) for mid in present])
            return present

    def _has(self, memory_id: str) -> bool:
        return self._conn.execute("SELECT 1 FROM trash WHERE memory_id = ?", (memory_id,)).fetchone() is not None

    def take(self, memory_ids: Sequence[str]) -> list[TrashRow]:
        """These rows with their vectors (not removed: the caller's transaction does that)."""
        found: list[TrashRow] = []
        with self._lock:
            for mid in dict.fromkeys(memory_ids):
                row = self._conn.execute(
                    "SELECT memory_id, deleted_us, deleted_by, body, meta, vector FROM trash WHERE memory_id = ?",
                    (mid,),
                ).fetchone()
                if row is not None:
                    vector = np.frombuffer(row[5], dtype=np.float32)
                    found.append(TrashRow(row[0], int(row[1]), row[2], row[3], json.loads(row[4]), vector))
        return found

    def page(self, offset: int, limit: int) -> tuple[list[TrashRow], int]:
        """The most recently deleted first (no vectors), and how many rows there are."""
        with self._lock:
            total = int(self._conn.execute("SELECT count(*) FROM trash").fetchone()[0])
            rows = self._conn.execute(
                "SELECT memory_id, deleted_us, deleted_by, body, meta FROM trash "
                "ORDER BY deleted_us DESC, memory_id DESC LIMIT ? OFFSET ?",
                (limit, offset),
            ).fetchall()
        return [TrashRow(r[0], int(r[1]), r[2], r[3], json.loads(r[4]), None) for r in rows], total
