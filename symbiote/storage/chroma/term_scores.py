"""A keyword search's BM25 scores: asked of SQLite, or added up from each word's held scores.

Each searched word's BM25 contribution to every memory holding it is held until the next write.
FTS5's BM25 for an OR of words is the sum, over the words, of each word's own BM25 (its IDF, its
weighted count in the row, the row's length against the average). Once every word of a query is
held, a keyword search adds a few arrays instead of having SQLite score up to `SCORED_ROWS` rows:
the same scores and the same matches, ties going to the newer memory.

A word in few memories (a name, a number) is held at once, for about what asking SQLite costs.
Any other is held after a search asked for it, in the store process's idle moments (`fill_step`,
a slice of rows at a time, so a request never waits long behind it), so no search pays for it.
A store in the server's own process has no idle moments and holds only the rare words.
A write changes every row's statistics, so it drops all that is held (`forget`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

import numpy as np

# At most HELD_ROWS rows are held in all (16 bytes each); past it, what is held is dropped. A word
# matching more than SCORED_TERM_ROWS rows (its own text or its neighbours') has no scores held:
# its searches stay with SQLite.
HELD_ROWS = 200_000
SCORED_TERM_ROWS = 5_000
FILL_ROWS = 250  # rows scored per idle step (about a millisecond of SQLite)
WANTED = 1_000  # words waiting to be held, the newest kept

Key = tuple[str, bool]  # (word, body only)


def _match(word: str, body_only: bool) -> str:
    return f'body : ("{word}")' if body_only else f'"{word}"'


class TermScores:
    """The scoring of one FTS5 table's matches. Not thread-safe: `SideDatabase` calls it under its lock."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        context_weight: float,
        term_rows: int = SCORED_TERM_ROWS,
        fill_rows: int = FILL_ROWS,
    ) -> None:
        self._conn = conn
        self._context_weight = context_weight  # the `ctx` column's BM25 weight (`body` 1.0)
        self._term_rows = term_rows
        self._fill_rows = fill_rows
        self._held: dict[Key, tuple[np.ndarray, np.ndarray] | None] = {}  # None: too common to hold
        self._rows = 0
        self._wanted: dict[Key, None] = {}  # asked for and not held yet, in order
        self._filling: tuple[Key, list[tuple[int, float]]] | None = None

    def forget(self) -> None:
        """The index changed: every held score is stale."""
        self._held.clear()
        self._rows = 0
        self._wanted.clear()
        self._filling = None

    def ranked(
        self, words: Sequence[str], body_only: bool, scored_rows: int, k: int, rare: Sequence[str] = ()
    ) -> list[tuple[int, float]] | None:
        """(rowid, score) of the best `k` among the newest `scored_rows` memories holding any of
        `words`, best first; None unless every word is held (the others are then wanted). The
        `rare` words, in a few rows each, are held at once: a question's one rare word (a name,
        a number) would otherwise keep it from the held scores of its everyday ones."""
        keys = [(word, body_only) for word in words]
        for key in [(word, body_only) for word in rare]:
            if key not in self._held:
                self._hold(key, self._scores(key))
        parts = [self._held.get(key) for key in keys]
        if any(part is None for part in parts):
            for key in keys:
                if key not in self._held:
                    self._wanted[key] = None
            while len(self._wanted) > WANTED:  # a store with no idle moments (in the server's process)
                del self._wanted[next(iter(self._wanted))]
            return None
        rowids = np.concatenate([part[0] for part in parts])  # type: ignore[index]
        scores = np.concatenate([part[1] for part in parts])  # type: ignore[index]
        if not len(rowids):
            return []
        rows, where = np.unique(rowids, return_inverse=True)
        totals = np.bincount(where, weights=scores, minlength=len(rows))
        rows, totals = rows[-scored_rows:], totals[-scored_rows:]  # rowids grow with time: the newest
        order = np.lexsort((-rows, -totals))[:k]  # best first; equal scores, the newer first
        return [(int(rows[i]), float(totals[i])) for i in order if totals[i] > 0]

    def asked(
        self,
        words: Sequence[str],
        body_only: bool,
        k: int,
        after_us: int | None,
        before_us: int | None,
        scored_rows: int | None,
    ) -> list[tuple[int, float]]:
        """The same as `ranked`, scored by SQLite (among the newest `scored_rows` matches, or all
        of them), within a time window if one is given."""
        match = " OR ".join(f'"{word}"' for word in words)
        if body_only:
            match = f"body : ({match})"
        # The join is only for time filters; otherwise the few ids are looked up after the sort.
        timed = after_us is not None or before_us is not None
        where = (
            "FROM fts JOIN docs ON docs.rowid = fts.rowid WHERE fts MATCH ?" if timed else "FROM fts WHERE fts MATCH ?"
        )
        params: list[object] = [match]
        if after_us is not None:
            where += " AND docs.created_us >= ?"
            params.append(after_us)
        if before_us is not None:
            where += " AND docs.created_us < ?"
            params.append(before_us)
        if scored_rows is not None:
            oldest = self._conn.execute(
                f"SELECT fts.rowid {where} ORDER BY fts.rowid DESC LIMIT 1 OFFSET ?", (*params, scored_rows)
            ).fetchone()
            if oldest is not None:  # more matches than are scored: the newest only
                where += " AND fts.rowid > ?"
                params.append(oldest[0])
        found = self._conn.execute(
            f"SELECT fts.rowid, -bm25(fts, 0.0, 1.0, ?) AS score {where} ORDER BY score DESC, fts.rowid DESC LIMIT ?",
            [self._context_weight, *params, k],
        ).fetchall()
        return [(int(row), float(score)) for row, score in found if score > 0]

    def fill_step(self) -> bool:
        """Score the next slice of rows of a wanted word; True while more is wanted."""
        if self._filling is None:
            while self._wanted:
                key = next(iter(self._wanted))
                del self._wanted[key]
                if key not in self._held:
                    self._filling = (key, [])
                    break
            else:
                return False
        key, rows = self._filling
        found = self._scores(key, below=rows[-1][0] if rows else None, limit=self._fill_rows)
        rows.extend(found)
        if len(rows) > self._term_rows:
            self._held[key] = None
            self._filling = None
        elif len(found) < self._fill_rows:
            self._hold(key, rows)
            self._filling = None
        return self._filling is not None or bool(self._wanted)

    def _scores(self, key: Key, below: int | None = None, limit: int = -1) -> list[tuple[int, float]]:
        """A word's (rowid, score) for the memories holding it, newest first: those under rowid
        `below`, `limit` of them (-1: all)."""
        return self._conn.execute(
            "SELECT rowid, -bm25(fts, 0.0, 1.0, ?) FROM fts WHERE fts MATCH ? AND rowid < ? ORDER BY rowid DESC LIMIT ?",
            (self._context_weight, _match(*key), 1 << 62 if below is None else below, limit),
        ).fetchall()

    def _hold(self, key: Key, rows: list[tuple[int, float]]) -> None:
        if self._rows + len(rows) > HELD_ROWS:
            self._held.clear()
            self._rows = 0
        rows.reverse()  # oldest first
        self._held[key] = (
            np.array([r for r, _ in rows], dtype=np.int64),
            np.array([s for _, s in rows], dtype=np.float64),
        )
        self._rows += len(rows)
