"""Keyword evidence weighed by how informative a word is in English, not in this store."""

from __future__ import annotations

from symbiote.retrieval.informative import QueryWords, information, stem


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
