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

import re
from functools import cache, lru_cache
from typing import Protocol

from symbiote.storage import query_terms

UNSEEN = 9.0  # -log10 of a frequency wordfreq does not list (below one in a billion)
_WORD = re.compile(r"[0-9a-z]+")


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
    from wordfreq import zipf_frequency  # its lists load on first use (0.2 s), off the way to `initialize`

    zipf = zipf_frequency(word, "en")
    return UNSEEN if zipf <= 0 else max(0.0, 9.0 - zipf)


def load_lists() -> None:
    """Import wordfreq, read its English list and make the stemmer now: some 0.3-0.5 s, most of it
    holding the GIL, that the first search, or the first store with a near neighbour (`holders`),
    would otherwise wait. The warm-up calls this in a thread beside the model's load."""
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
