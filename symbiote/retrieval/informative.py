"""How much of a query's meaning a memory's words carry, with each word weighed by how rare it is in
the language, not in this store.

A store-relative weight (BM25's IDF, or a score relative to the best keyword match) makes one common
word decisive in a store where nothing else matches: "what type of tea do I drink?" lifted a chat turn
that says "what type of guitar". A word's weight here is its information in English, `-log10` of its
frequency in `wordfreq`'s lists (a maintained package of word frequencies): "type" weighs 3.7, "polars"
7.6, a name never seen 9. Words are compared by their Snowball stems ("plays" is "play"), from
PyStemmer, Snowball's own C library: the pure-Python port took 40 us a word, a tenth of a
search's judging on memories it had not seen (the same stems on wordfreq's 276,000 English words).
"""

from __future__ import annotations

import logging
import math
import os
import re
import sqlite3
import threading
from functools import cache, lru_cache
from importlib import metadata
from pathlib import Path
from typing import Protocol

from symbiote.storage import query_terms

log = logging.getLogger(__name__)

UNSEEN = 9.0  # -log10 of a frequency wordfreq does not list (below one in a billion)
_WORD = re.compile(r"[0-9a-z]+")
_PLAIN = re.compile(r"[a-z]+")  # one token to wordfreq, looked up as it is: what the word table holds


class Stemmer(Protocol):
    """What this module uses of a Snowball stemmer."""

    def stemWord(self, word: str) -> str: ...  # the library's name


@cache
def _stemmer() -> Stemmer:
    import Stemmer as snowball  # imported when first needed: it is not on the way to `initialize`

    stemmer: Stemmer = snowball.Stemmer("english")
    return stemmer


@lru_cache(maxsize=65_536)
def stem(word: str) -> str:
    return _stemmer().stemWord(word)


@lru_cache(maxsize=65_536)
def information(word: str) -> float:
    """A word's information in English: -log10 of its frequency (0 for the commonest words)."""
    table = _TABLE[0]
    zipf: float | None = None
    if table is not None and _PLAIN.fullmatch(word):
        try:
            zipf = table.zipf(word)
        except (sqlite3.Error, ValueError, TypeError) as exc:  # a damaged page, a value that is no number
            _give_up(table, word, exc)
    if zipf is None:
        from wordfreq import zipf_frequency  # its lists load on first use (0.2 s), off the way to `initialize`

        zipf = zipf_frequency(word, "en")
    return UNSEEN if zipf <= 0 else max(0.0, 9.0 - zipf)


def _give_up(table: WordTable, word: str, exc: Exception) -> None:
    """A lookup in the table failed: the table is dropped for this process, once, and wordfreq's list
    answers from then on, as where there is no table (a damaged table is never trusted in part)."""
    with _OPENING:
        if _TABLE[0] is not table:
            return  # another thread gave up on it first
        _TABLE[0] = None
    log.warning("the word table failed on %r (%s); reading wordfreq's list instead from now on", word, exc)


class WordTable:
    """wordfreq's English Zipf values of its plain words ([a-z]+: 289,000 of them), a row each in SQLite.

    Importing wordfreq and reading its English list into a dict costs some 0.2 s of CPU at every
    start, 0.4 s of a wake at half a core, before the first search can score a word. A word is
    looked up here instead when it is asked for (a few microseconds, then cached by `information`).
    The values are `zipf_frequency`'s own, written by `make_word_table` beside the model: any other
    word (digits, accents) still goes to wordfreq, which works out a number's frequency from its digits.
    """

    def __init__(self, path: Path) -> None:
        self._conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
        self._lock = threading.Lock()

    def zipf(self, word: str) -> float:
        with self._lock:
            row = self._conn.execute("SELECT zipf FROM words WHERE word = ?", (word,)).fetchone()
        if row is None:
            return 0.0
        zipf = float(row[0])  # ValueError or TypeError for what is no number
        if not math.isfinite(zipf):
            raise ValueError(f"the word table gives {word!r} the frequency {row[0]!r}")
        return zipf

    def close(self) -> None:
        with self._lock:  # not under a lookup
            self._conn.close()


# The table `load_lists` opened, read by every thread's `information` for the process's life (one
# file, read-only; every model folder's table holds the same values for the same wordfreq).
_TABLE: list[WordTable | None] = [None]
_OPENING = threading.Lock()


def word_table_name() -> str:
    """The table's file name, for the installed wordfreq (another release, another table)."""
    return f"wordfreq-en-{metadata.version('wordfreq')}.sqlite3"


def make_word_table(folder: Path) -> Path:
    """Write `zipf_frequency` of every plain word of wordfreq's English list into the table (about
    2 s; setup and the image do it when they export the model), whole or not at all."""
    from wordfreq import get_frequency_dict, zipf_frequency

    path = folder / word_table_name()
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
    partial.unlink(missing_ok=True)
    conn = sqlite3.connect(partial)
    try:
        conn.execute("CREATE TABLE words (word TEXT PRIMARY KEY, zipf REAL NOT NULL) WITHOUT ROWID")
        rows = ((w, zipf_frequency(w, "en")) for w in get_frequency_dict("en") if _PLAIN.fullmatch(w))
        conn.executemany("INSERT INTO words VALUES (?, ?)", rows)
        conn.commit()
    finally:
        conn.close()
    os.replace(partial, path)
    return path


def load_lists(folder: Path | None = None) -> None:
    """Ready what scoring reads, so that the first search, or the first storing with a near neighbour
    (`holders`), does not wait for it: the word table in `folder` (the model's) where setup wrote
    one, else wordfreq and its English list (some 0.3-0.5 s, most of it holding the GIL); and the
    stemmer. The warm-up calls this in a thread beside the model's load."""
    path = folder / word_table_name() if folder is not None else None
    with _OPENING:
        if _TABLE[0] is None and path is not None and path.is_file():
            try:
                table = WordTable(path)
                table.zipf("the")
            except sqlite3.Error as exc:
                log.warning("the word table %s is unreadable (%s); reading wordfreq's list instead", path, exc)
            else:
                _TABLE[0] = table
    information("the")
    stem("the")


@lru_cache(maxsize=4096)  # the same memories come back search after search
def stems(text: str) -> frozenset[str]:
    """The stems of every word in a text."""
    return frozenset(stem(w) for w in _WORD.findall(text.lower().replace("\u2019", "'")))


class QueryWords:
    """A query's content words, their stems and weights: computed once, checked against each memory."""

    def __init__(self, text: str) -> None:
        words = query_terms(text)
        self.weights = {stem(w): information(w) for w in words}
        self.total = sum(self.weights.values())

    def coverage(self, memory_text: str) -> float:
        """The share of the query's information the memory's words carry, 0..1."""
        if self.total <= 0:
            return 0.0
        held = stems(memory_text)
        return sum(weight for s, weight in self.weights.items() if s in held) / self.total
