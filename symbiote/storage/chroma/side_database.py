"""The SQLite database beside Chroma (`SideDatabase`): every table Symbiote keeps next to the vectors,
in one file (`SIDE_DATABASE_FILE`, an older name kept for existing data), on one connection, under
one lock and one transaction.

- The keyword index (`docs` and `fts`, FTS5 with BM25). MiniLM misses what people most often ask
  about by name: people, places, numbers, rare words ("what did Caroline say about the adoption
  agency?"); on LoCoMo, BM25 alone beats cosine and the two fused beat both. Chroma's local mode has
  no lexical search. Each memory is indexed with two columns: its own text (`body`) and the text of
  the memories stored just before it within 30 minutes (`ctx`, weighted 0.4): what was said around
  a memory often names what the memory itself only implies ("she" -> "Caroline"). A memory's row in
  `fts` has the same rowid as its row in `docs` (schema version 1); searches work on rowids and look
  ids up in `docs` by its primary key.
- The durable queue of passages still to be indexed (`pending`): a memory's sentences are queued in
  the transaction that stores it (`symbiote.storage.chroma.passages`).
- The write-behind journal (`UnwrittenRows`: `unwritten`, `unlinked`, and the rows an earlier
  release journalled that Chroma refuses, `set_aside`; `symbiote.storage.chroma.additions`).
- The trash's rows (`TrashRows`, `symbiote.storage.chroma.trashing`).

All writes go through `SideDatabase.transaction()` so the caller can make them atomic with the
Chroma write: both happen or neither does.

The trash's rows, in the side database's file beside the memories' keyword entries.

A row holds everything a restore needs (the text, the Chroma metadata as JSON, the whole text's
vector) and when and by whom the memory was deleted. Kept in SQLite rather than a Chroma
collection: Chroma builds a vector index for every record added, which made moving 11,000
memories to the trash take 31 s; here it is a few inserts, listed in order of deletion by an
index. A memory enters the trash and leaves its keyword entry in one transaction, before Chroma
lets it go (`symbiote.storage.chroma.trashing`: a move left half done is settled against Chroma).

The keyword index and the passages' queue are derived (rebuilt from Chroma); the journal and the
trash are primary data, found nowhere else: a damaged file gives up the first and has the second
read out of it (`symbiote.storage.chroma.salvage`).
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from symbiote.storage.base import KeywordMatch, StoredMemory
from symbiote.storage.chroma.codec import metadata_of
from symbiote.storage.chroma.term_scores import TermScores
from symbiote.storage.terms import query_terms

CONTEXT_WINDOW_US = 30 * 60 * 1_000_000
CONTEXT_MEMORIES = 2
CONTEXT_WEIGHT = 0.4
COMMON_TERM_SHARE = 0.2  # terms in more than this share of memories carry no signal...
COMMON_TERM_MIN_DOCS = 100  # ...once there are enough memories to tell
# BM25 reads every row a query's words match: at 100,000 memories a few everyday words match tens
# of thousands. A search keeps its rarest words up to this many matching rows between them (the
# rarest always); the commoner ones are left to the vector search, which finds those memories anyway.
KEYWORD_ROWS = 4_000
# Even one kept word can match thousands of rows, and BM25 scores each of them. A search scores the
# newest this many of its matches: older ones, in a store that large, are left to the vector search.
SCORED_ROWS = 1_000
# A word's BM25 scores are held until the next write once a search has asked for it
# (`storage.chroma.term_scores`), at once for a word in at most RARE_TERM_ROWS memories.
RARE_TERM_ROWS = 100
SCHEMA_VERSION = 1  # 1: fts rowid = docs rowid


class LexicalTransaction:
    """Pending index changes; committed or rolled back by `SideDatabase.transaction()`."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def add(self, memory_id: str, created_us: int, body: str) -> None:
        ctx = self._context(created_us)
        row = self._conn.execute(
            "INSERT INTO docs(memory_id, created_us, body) VALUES (?, ?, ?)", (memory_id, created_us, body)
        ).lastrowid
        self._conn.execute(
            "INSERT INTO fts(rowid, memory_id, body, ctx) VALUES (?, ?, ?, ?)", (row, memory_id, body, ctx)
        )

    def queue_passages(self, memory_id: str, windows: Sequence[str] | None) -> None:
        """Queue a memory's passages for indexing after the write (None: work them out from its text)."""
        self._conn.execute(
            "INSERT OR REPLACE INTO pending(memory_id, windows) VALUES (?, ?)",
            (memory_id, None if windows is None else json.dumps(list(windows))),
        )

    def delete(self, memory_id: str) -> None:
        self._conn.execute("DELETE FROM pending WHERE memory_id = ?", (memory_id,))
        self._conn.execute("DELETE FROM unwritten WHERE memory_id = ?", (memory_id,))
        self._conn.execute("DELETE FROM unlinked WHERE memory_id = ?", (memory_id,))
        found = self._conn.execute("SELECT rowid FROM docs WHERE memory_id = ?", (memory_id,)).fetchone()
        if found is not None:
            self._conn.execute("DELETE FROM fts WHERE rowid = ?", found)
            self._conn.execute("DELETE FROM docs WHERE rowid = ?", found)

    def _context(self, created_us: int) -> str:
        rows = self._conn.execute(
            "SELECT body FROM docs WHERE created_us < ? AND created_us >= ? ORDER BY created_us DESC LIMIT ?",
            (created_us, created_us - CONTEXT_WINDOW_US, CONTEXT_MEMORIES),
        ).fetchall()
        return "\n".join(body for (body,) in reversed(rows))


class SideDatabase:
    """The side database's file: the keyword index's searches, and the one transaction its writes, the
    journal's and the trash's share. Thread-safe: one connection, one lock (SQLite serialises writes anyway)."""

    def __init__(
        self,
        path: Path,
        keyword_rows: int = KEYWORD_ROWS,
        scored_rows: int = SCORED_ROWS,
    ) -> None:
        self.path = path
        self._keyword_rows = keyword_rows
        self._scored_rows = scored_rows
        self._lock = threading.RLock()
        self._conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None, timeout=10)
        try:
            self._open()
        except BaseException:  # closed at once: a damaged file is moved aside next, and its WAL with it
            self._conn.close()
            raise

    def _open(self) -> None:
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS docs (memory_id TEXT PRIMARY KEY, created_us INTEGER NOT NULL, body TEXT NOT NULL)"
        )
        self._conn.execute("CREATE INDEX IF NOT EXISTS docs_created ON docs(created_us)")
        self._conn.execute("CREATE TABLE IF NOT EXISTS pending (memory_id TEXT PRIMARY KEY, windows TEXT)")
        self._counts: dict[str, int] = {}  # "" -> all memories, term -> memories containing it; reset on write
        self._scores = TermScores(self._conn, CONTEXT_WEIGHT)
        self.trash = TrashRows(self._conn, self._lock)  # deleted memories (`symbiote.storage.chroma.trashing`)
        # memories acknowledged before Chroma had them (`symbiote.storage.chroma.additions`)
        self.unwritten = UnwrittenRows(self._conn, self._lock)
        # what an open could not recover from a damaged copy of this file, and where that copy was set aside
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS losses (set_us INTEGER NOT NULL, file TEXT NOT NULL, what TEXT NOT NULL)"
        )
        self._conn.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5("
            "memory_id UNINDEXED, body, ctx, tokenize='porter unicode61 remove_diacritics 2')"
        )
        self._align()
        for table in ("unwritten", "unlinked", "set_aside", "moving"):  # the journal's b-trees read whole (all
            # but empty): a damaged page shows now, while its rows can be read out (`storage.chroma.salvage`)
            self._conn.execute(f"SELECT count(*) FROM {table} NOT INDEXED").fetchone()

    def _align(self) -> None:
        """Give every fts row its docs row's rowid (an index written before schema version 1, or
        one whose rowids drifted), keeping the indexed text; cheap to check at every open."""
        conn = self._conn
        if conn.execute("PRAGMA user_version").fetchone()[0] >= SCHEMA_VERSION and self._aligned():
            return
        with self._lock:
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute("CREATE TEMP TABLE old_fts AS SELECT memory_id, body, ctx FROM fts")
                conn.execute("DELETE FROM fts")
                conn.execute(
                    "INSERT INTO fts(rowid, memory_id, body, ctx) "
                    "SELECT docs.rowid, old_fts.memory_id, old_fts.body, old_fts.ctx FROM old_fts JOIN docs USING (memory_id)"
                )
                conn.execute("DROP TABLE old_fts")
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def _aligned(self) -> bool:
        """Same number of rows, and the newest rows agree (rowids are only ever appended)."""
        conn = self._conn
        docs = int(conn.execute("SELECT count(*) FROM docs").fetchone()[0])
        if docs != conn.execute("SELECT count(*) FROM fts").fetchone()[0]:
            return False
        newest = conn.execute(
            "SELECT count(*) FROM (SELECT rowid, memory_id FROM docs ORDER BY rowid DESC LIMIT 3) AS d "
            "JOIN fts ON fts.rowid = d.rowid AND fts.memory_id = d.memory_id"
        ).fetchone()[0]
        return int(newest) == min(3, docs)

    @contextlib.contextmanager
    def transaction(self, durable: bool = False) -> Iterator[LexicalTransaction]:
        """Stage changes; they are committed only if the block (and the Chroma write in it) succeeds.
        `durable`: committed with `synchronous=FULL`, to survive a power cut as well as a crash
        (`symbiote.storage.chroma.additions`); the index's own commits need only the latter."""
        with self._lock:
            if durable:
                self._conn.execute("PRAGMA synchronous=FULL")
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    yield LexicalTransaction(self._conn)
                except BaseException:
                    self._conn.execute("ROLLBACK")
                    self._forget_counts()
                    raise
                self._conn.execute("COMMIT")
                self._forget_counts()
            finally:
                if durable:
                    self._conn.execute("PRAGMA synchronous=NORMAL")

    def _forget_counts(self) -> None:
        self._counts.clear()
        self._scores.forget()

    def idle_step(self) -> bool:
        """Hold the BM25 scores of the words searches asked for, a slice at a time; True while more."""
        with self._lock:
            return self._scores.fill_step()

    def count(self) -> int:
        with self._lock:
            if "" not in self._counts:
                self._counts[""] = int(self._conn.execute("SELECT count(*) FROM docs").fetchone()[0])
            return self._counts[""]

    def pending(self, limit: int, exclude: Sequence[str] = ()) -> list[tuple[str, list[str] | None, str]]:
        """Queued passages, oldest first, but those of `exclude`: (memory id, its passages or None, its text)."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT pending.memory_id, pending.windows, docs.body FROM pending JOIN docs USING (memory_id) "
                "WHERE pending.memory_id NOT IN (SELECT value FROM json_each(?)) ORDER BY pending.rowid LIMIT ?",
                (json.dumps(list(exclude)), limit),
            ).fetchall()
        return [
            (str(mid), json.loads(windows) if windows is not None else None, str(body)) for mid, windows, body in rows
        ]

    def pending_count(self) -> int:
        """How many memories still have passages queued."""
        with self._lock:
            return int(self._conn.execute("SELECT count(*) FROM pending").fetchone()[0])

    def queued(self, memory_ids: Sequence[str]) -> set[str]:
        """Which of these memories still have passages queued."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT memory_id FROM pending WHERE memory_id IN (SELECT value FROM json_each(?))",
                (json.dumps(list(memory_ids)),),
            ).fetchall()
        return {str(mid) for (mid,) in rows}

    def dequeue(self, memory_ids: Sequence[str]) -> None:
        """Forget queued passages once they are indexed (or their memory is gone)."""
        with self._lock:
            self._conn.executemany("DELETE FROM pending WHERE memory_id = ?", [(mid,) for mid in memory_ids])

    def bodies(self, memory_ids: Sequence[str]) -> dict[str, str]:
        """The text each of these memories was indexed with (its content)."""
        if not memory_ids:
            return {}
        with self._lock:
            rows = self._conn.execute(
                "SELECT memory_id, body FROM docs WHERE memory_id IN (SELECT value FROM json_each(?))",
                (json.dumps(list(memory_ids)),),
            ).fetchall()
        return {str(memory_id): str(body) for memory_id, body in rows}

    def ids(self) -> set[str]:
        with self._lock:
            return {row[0] for row in self._conn.execute("SELECT memory_id FROM docs")}

    def newest(
        self,
        offset: int,
        limit: int,
        after_us: int | None = None,
        before_us: int | None = None,
        among: Sequence[str] | None = None,
    ) -> tuple[list[str], int]:
        """A page of memory ids, newest first (by creation time), and how many there are in all:
        the console's list reads its order here, where it is indexed, rather than from Chroma."""
        where: list[str] = ["1"]
        params: list[object] = []
        if after_us is not None:
            where.append("created_us >= ?")
            params.append(after_us)
        if before_us is not None:
            where.append("created_us < ?")
            params.append(before_us)
        if among is not None:
            where.append("memory_id IN (SELECT value FROM json_each(?))")
            params.append(json.dumps(list(among)))
        condition = " AND ".join(where)
        with self._lock:
            total = int(self._conn.execute(f"SELECT count(*) FROM docs WHERE {condition}", params).fetchone()[0])
            rows = self._conn.execute(
                f"SELECT memory_id FROM docs WHERE {condition} ORDER BY created_us DESC, memory_id DESC LIMIT ? OFFSET ?",
                [*params, limit, offset],
            ).fetchall()
        return [str(memory_id) for (memory_id,) in rows], total

    def rebuild(self, memories: Sequence[tuple[str, int, str]]) -> None:
        """Replace the whole index with (memory_id, created_us, content), oldest first."""
        with self.transaction() as tx:
            self._conn.execute("DELETE FROM docs")
            self._conn.execute("DELETE FROM fts")
            for memory_id, created_us, body in sorted(memories, key=lambda m: m[1]):
                tx.add(memory_id, created_us, body)

    def search(
        self, text: str, k: int, after_us: int | None = None, before_us: int | None = None
    ) -> list[KeywordMatch]:
        """Memories sharing the query's content words, best BM25 first (common words ignored)."""
        return self.search_words(query_terms(text), k, after_us, before_us, skip_common=True)

    def search_words(
        self,
        words: Sequence[str],
        k: int,
        after_us: int | None = None,
        before_us: int | None = None,
        skip_common: bool = False,
        body_only: bool = False,
    ) -> list[KeywordMatch]:
        """BM25 matches for any of `words`; `body_only` ignores the neighbours' context column."""
        if not words:
            return []
        with self._lock:
            if skip_common:
                words = self._telling(words)
            if not words:
                return []
            rows = None
            if after_us is None and before_us is None:  # held scores know no time
                rare = [w for w in words if self._doc_count(w) <= RARE_TERM_ROWS]
                rows = self._scores.ranked(words, body_only, self._scored_rows, k, rare)
            if rows is None:
                scored = self._scored_rows if self.count() > self._scored_rows else None
                rows = self._scores.asked(words, body_only, k, after_us, before_us, scored)
            ids = self._ids_of([row for row, _ in rows])
        return [KeywordMatch(ids[row], score) for row, score in rows if row in ids]

    def _telling(self, words: Sequence[str]) -> list[str]:
        """The words worth a BM25 pass: not common (once the store is big enough to tell), and the
        rarest first up to KEYWORD_ROWS matching rows between them."""
        total = self.count()
        if total < COMMON_TERM_MIN_DOCS:
            return list(words)
        counted = sorted((self._doc_count(t), t) for t in words)
        counted = [(count, term) for count, term in counted if count <= COMMON_TERM_SHARE * total]
        kept: list[str] = []
        rows = 0
        for count, term in counted:
            if kept and rows + count > self._keyword_rows:
                break
            kept.append(term)
            rows += count
        return kept

    def _ids_of(self, rows: Sequence[int]) -> dict[int, str]:
        if not rows:
            return {}
        found = self._conn.execute(
            f"SELECT rowid, memory_id FROM docs WHERE rowid IN ({','.join('?' * len(rows))})", rows
        )
        return {int(row): str(memory_id) for row, memory_id in found}

    def _doc_count(self, term: str) -> int:
        """Memories containing `term` (stemmed); cached until the next write, as every search asks."""
        if term not in self._counts:
            if len(self._counts) > 10_000:
                self._counts.clear()
            self._counts[term] = int(
                self._conn.execute("SELECT count(*) FROM fts WHERE fts MATCH ?", (f'body:"{term}"',)).fetchone()[0]
            )
        return self._counts[term]

    def put_back(self, table: str, columns: Sequence[str], rows: Sequence[tuple[Any, ...]]) -> None:
        """Rows read out of a damaged copy of this file (`symbiote.storage.chroma.salvage`), as they were."""
        known = {str(row[1]) for row in self._conn.execute(f"PRAGMA table_info({table})")}
        kept = [i for i, column in enumerate(columns) if column in known]
        listed = ", ".join(columns[i] for i in kept)
        with self.transaction(durable=True):
            self._conn.executemany(
                f"INSERT OR REPLACE INTO {table}({listed}) VALUES ({', '.join('?' * len(kept))})",
                [tuple(row[i] for i in kept) for row in rows],
            )

    def note_loss(self, file: str, what: str) -> None:
        """Remember, until `file` is gone from beside this one, that an open could not recover `what` from it."""
        with self.transaction(durable=True):
            self._conn.execute(
                "INSERT INTO losses(set_us, file, what) VALUES (?, ?, ?)", (time.time_ns() // 1000, file, what)
            )

    def losses(self) -> list[tuple[str, str]]:
        """(file set aside, what could not be recovered from it) for each such file still beside this one."""
        with self._lock:
            rows = self._conn.execute("SELECT file, what FROM losses ORDER BY set_us").fetchall()
        return [(str(file), str(what)) for file, what in rows if (self.path.parent / str(file)).exists()]

    def close(self) -> None:
        with self._lock:
            self._conn.close()


# -- the write-behind journal (symbiote.storage.chroma.additions) --------------------------------

Item = tuple[StoredMemory, np.ndarray, Sequence[str]]  # a memory, its vectors (all or the first), its passages


class UnwrittenRows:
    """The `unwritten` table in the side database's file: memories acknowledged, not yet in Chroma.
    `put` belongs inside `SideDatabase.transaction(durable=True)` (the same connection)."""

    def __init__(self, conn: sqlite3.Connection, lock: threading.RLock) -> None:
        self._conn = conn
        self._lock = lock
        conn.execute(
            "CREATE TABLE IF NOT EXISTS unwritten "
            "(memory_id TEXT PRIMARY KEY, body TEXT NOT NULL, meta TEXT NOT NULL, vector BLOB NOT NULL)"
        )
        conn.execute("CREATE TABLE IF NOT EXISTS unlinked (memory_id TEXT PRIMARY KEY, meta TEXT NOT NULL)")
        conn.execute(
            "CREATE TABLE IF NOT EXISTS set_aside (memory_id TEXT PRIMARY KEY, body TEXT NOT NULL, "
            "meta TEXT NOT NULL, vector BLOB NOT NULL, reason TEXT NOT NULL, set_us INTEGER NOT NULL)"
        )

    def put(self, items: Sequence[Item]) -> None:
        with self._lock:
            self._conn.executemany(
                "INSERT OR REPLACE INTO unwritten(memory_id, body, meta, vector) VALUES (?, ?, ?, ?)",
                [
                    (
                        memory.memory_id,
                        memory.content,
                        json.dumps(metadata_of(memory, len(windows))),
                        np.asarray(vectors[0], dtype=np.float32).tobytes(),
                    )
                    for memory, vectors, windows in items
                ],
            )

    def put_links(self, links: dict[str, dict[str, Any]]) -> None:
        """Memories' link fields, to write to Chroma (each row the whole of a memory's links: the latest wins)."""
        with self._lock:
            self._conn.executemany(
                "INSERT OR REPLACE INTO unlinked(memory_id, meta) VALUES (?, ?)",
                [(mid, json.dumps(meta)) for mid, meta in links.items()],
            )

    def links(self) -> dict[str, dict[str, Any]]:
        with self._lock:
            rows = self._conn.execute("SELECT memory_id, meta FROM unlinked ORDER BY rowid").fetchall()
        return {str(mid): json.loads(meta) for mid, meta in rows}

    def remove_links(self, memory_ids: Sequence[str]) -> None:
        with self._lock:
            self._conn.executemany("DELETE FROM unlinked WHERE memory_id = ?", [(mid,) for mid in memory_ids])

    def remove(self, memory_ids: Sequence[str]) -> None:
        """Forget these rows (their memories are in Chroma now), in a commit of its own."""
        with self._lock:
            self._conn.executemany("DELETE FROM unwritten WHERE memory_id = ?", [(mid,) for mid in memory_ids])

    def set_aside(self, memory_ids: Sequence[str], reasons: Sequence[str]) -> None:
        """Move these journal rows, which Chroma refuses, into `set_aside`: kept as they were (the
        body as JSON, so text that is not Unicode is kept too), never written, never a reason the
        store does not open. Inside a `SideDatabase.transaction`, with the rows' removal from the index."""
        stamp = time.time_ns() // 1000
        with self._lock:
            for mid, reason in zip(memory_ids, reasons):
                self._conn.execute(
                    "INSERT OR REPLACE INTO set_aside(memory_id, body, meta, vector, reason, set_us) "
                    "SELECT memory_id, ?, meta, vector, ?, ? FROM unwritten WHERE memory_id = ?",
                    (json.dumps(self._body(mid)), reason, stamp, mid),
                )
                self._conn.execute("DELETE FROM unwritten WHERE memory_id = ?", (mid,))

    def _body(self, memory_id: str) -> str:
        row = self._conn.execute("SELECT body FROM unwritten WHERE memory_id = ?", (memory_id,)).fetchone()
        return str(row[0]) if row is not None else ""

    def aside(self) -> list[tuple[str, str, dict[str, Any], str]]:
        """The rows set aside: (memory id, text, metadata, why), text and metadata as journalled."""
        with self._lock:
            rows = self._conn.execute("SELECT memory_id, body, meta, reason FROM set_aside ORDER BY rowid").fetchall()
        return [(str(mid), str(json.loads(body)), json.loads(meta), str(reason)) for mid, body, meta, reason in rows]

    def aside_count(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT count(*) FROM set_aside").fetchone()[0])

    def all(self) -> list[tuple[str, str, dict[str, Any], np.ndarray]]:
        with self._lock:
            rows = self._conn.execute("SELECT memory_id, body, meta, vector FROM unwritten ORDER BY rowid").fetchall()
        return [
            (str(mid), str(body), json.loads(meta), np.frombuffer(vector, dtype=np.float32))
            for mid, body, meta, vector in rows
        ]


# -- the trash's rows (symbiote.storage.chroma.trashing) ------------------------------------------


@dataclass(frozen=True)
class TrashRow:
    memory_id: str
    deleted_us: int
    deleted_by: str
    body: str
    meta: dict[str, Any]  # the memory's Chroma metadata
    vector: np.ndarray | None  # the whole text's; None when read for a listing


class TrashRows:
    """The `trash` table; its writes belong inside `SideDatabase.transaction()` (the same connection)."""

    def __init__(self, conn: sqlite3.Connection, lock: threading.RLock) -> None:
        self._conn = conn
        self._lock = lock
        conn.execute(
            "CREATE TABLE IF NOT EXISTS trash (memory_id TEXT PRIMARY KEY, deleted_us INTEGER NOT NULL, "
            "deleted_by TEXT NOT NULL, body TEXT NOT NULL, meta TEXT NOT NULL, vector BLOB NOT NULL)"
        )
        conn.execute("CREATE INDEX IF NOT EXISTS trash_deleted ON trash(deleted_us, memory_id)")
        # memories on their way into or out of the trash, or being rewritten: committed before Chroma
        # is touched, cleared after; what a failure or a crash leaves here is settled by `Trash.settle`
        conn.execute("CREATE TABLE IF NOT EXISTS moving (memory_id TEXT PRIMARY KEY)")

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

    def mark(self, memory_ids: Sequence[str]) -> None:
        """Note these memories as moving into or out of the trash (in the transaction before Chroma's write)."""
        with self._lock:
            self._conn.executemany("INSERT OR REPLACE INTO moving(memory_id) VALUES (?)", [(m,) for m in memory_ids])

    def unmark(self, memory_ids: Sequence[str]) -> None:
        with self._lock:
            self._conn.executemany("DELETE FROM moving WHERE memory_id = ?", [(m,) for m in memory_ids])

    def moving(self) -> list[str]:
        """The memories a move into or out of the trash left unfinished (usually none)."""
        with self._lock:
            return [str(mid) for (mid,) in self._conn.execute("SELECT memory_id FROM moving ORDER BY rowid")]

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
