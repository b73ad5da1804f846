"""Keyword evidence weighed by how informative a word is in English, not in this store."""

from __future__ import annotations

import random
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from symbiote.retrieval import informative
from symbiote.retrieval.informative import QueryWords, WordTable, information, load_lists, make_word_table, stem


def test_a_common_word_weighs_less_than_a_rare_one_and_an_unseen_one_most() -> None:
    assert information("type") < information("guitar") < information("polars") <= information("clayhouse")
    assert information("the") < 2


def test_words_are_compared_by_their_stems() -> None:
    assert stem("plays") == stem("play") and stem("studios") == stem("studio")
    assert QueryWords("what sport do I play?").coverage("Plays five-a-side football on Thursdays.") > 0


def test_one_common_shared_word_carries_less_than_the_rare_words_of_the_query() -> None:
    words = QueryWords("which dataframe library do I like for data work?")
    chatter = words.coverage("Melanie: What type of work do you like?")
    fact = words.coverage("Prefers Python for data work; the dataframe library is Polars.")
    assert chatter < 0.3 < fact


def test_a_query_of_stopwords_alone_covers_nothing() -> None:
    assert QueryWords("what is it?").coverage("anything at all") == 0.0


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One table made for the module (some seconds each); a test that changes one works on a copy."""
    yield make_word_table(tmp_path_factory.mktemp("words"))


def _copy(made: Path, folder: Path) -> Path:
    return Path(shutil.copy(made, folder / made.name))


@pytest.mark.slow
def test_the_word_table_holds_wordfreqs_own_values(made: Path) -> None:
    """What a start reads instead of wordfreq's list (`WordTable`): the same number for every plain word."""
    from wordfreq import get_frequency_dict, zipf_frequency

    table = WordTable(made)
    try:
        listed = [w for w in get_frequency_dict("en") if w.isascii() and w.isalpha() and w.islower()]
        sample = [*listed[:2000], *random.Random(61).sample(listed, 3000), "clayhouse", "zzzqxv"]
        assert [table.zipf(w) for w in sample] == [zipf_frequency(w, "en") for w in sample]
        assert table.zipf("clayhouse") == 0.0  # not listed: unseen, as wordfreq says
    finally:
        table.close()


@pytest.mark.slow
def test_the_warm_up_opens_the_table_and_other_words_still_go_to_wordfreq(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, made: Path
) -> None:
    from wordfreq import zipf_frequency

    monkeypatch.setattr(informative, "_TABLE", [None])  # this process's table, put back afterwards
    load_lists(tmp_path)  # no table there: wordfreq's list, as before
    assert informative._TABLE[0] is None
    _copy(made, tmp_path)
    load_lists(tmp_path)
    table = informative._TABLE[0]
    assert isinstance(table, WordTable)
    try:
        for word in ("guitar", "2023", "café", "mp3"):  # the table's, then three wordfreq works out
            information.cache_clear()
            zipf = zipf_frequency(word, "en")
            assert information(word) == (informative.UNSEEN if zipf <= 0 else max(0.0, 9.0 - zipf))
    finally:
        information.cache_clear()
        table.close()


@pytest.mark.slow  # the word table, made once for the module's tests that read it, takes some 5 s
@pytest.mark.parametrize("damage", ["a damaged page", "a frequency that is no number"])
def test_a_word_table_that_fails_a_lookup_gives_way_to_wordfreq_with_one_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, damage: str, made: Path
) -> None:
    """Issue 67 L8: 3 of 10 searches answered "Internal error" on a table with damaged pages (the
    start's check looks up one word), and so did a non-numeric frequency."""
    import sqlite3

    from wordfreq import zipf_frequency

    path = _copy(made, tmp_path)
    if damage == "a damaged page":
        with path.open("r+b") as file:  # pages of words in a-f (sorted): the start's check ("the") still passes
            page = 4096
            file.seek(3 * page)
            file.write(b"\xa5" * (path.stat().st_size // 4 // page * page))
    else:
        with sqlite3.connect(path) as conn:
            conn.execute("UPDATE words SET zipf = 'lots' WHERE word = 'guitar'")
        conn.close()
    monkeypatch.setattr(informative, "_TABLE", [None])
    information.cache_clear()
    load_lists(tmp_path)
    try:
        words = ["guitar", "tea", "polars", "saxophone", "tuesday", "adoption", "agency", "budget"]
        for word in words:
            zipf = zipf_frequency(word, "en")
            assert information(word) == (informative.UNSEEN if zipf <= 0 else max(0.0, 9.0 - zipf)), word
        assert informative._TABLE[0] is None  # dropped once it failed
        warnings = [r for r in caplog.records if "word table failed" in r.message]
        assert len(warnings) == 1
        assert QueryWords("what guitar does the adoption agency budget for?").total > 0
    finally:
        information.cache_clear()
