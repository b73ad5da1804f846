"""Whose memory it is, and whom a question asks about."""

from __future__ import annotations

import pytest

from symbiote.retrieval.holders import agreement, of_memory, of_query


@pytest.mark.parametrize(
    ("text", "kind", "who"),
    [
        ("Plays five-a-side football on Thursday evenings.", "owner", set()),
        ("The user drinks green tea with honey, never coffee.", "owner", set()),
        ("I'm coeliac, so nothing with wheat.", "owner", set()),
        ("User's partner Sam is a nurse who works night shifts.", "other", {"partner"}),
        ("My brother Tomasz is a firefighter.", "other", {"brother"}),
        ("3:19 pm on 28 August, 2023 Melanie: What type of guitar do you play?", "other", {"melanie"}),
        ("25 May 2023 Caroline: I went to a support group yesterday.", "other", {"caroline"}),
        ("Note: revalidation due by 30 September.", "unknown", set()),
    ],
)
def test_a_memory_says_whose_it_is(text: str, kind: str, who: set[str]) -> None:
    holder = of_memory(text)
    assert holder.kind == kind and set(holder.who) == who


@pytest.mark.parametrize(
    ("query", "kind", "who"),
    [
        ("what sport do I play?", "owner", set()),
        ("user dietary restrictions", "owner", set()),
        ("what does my partner do?", "other", {"partner"}),
        ("how old are my sisters?", "other", {"sister"}),
        ("what did Melanie paint?", "other", {"melanie"}),
        ("hearing problems", "unknown", set()),
    ],
)
def test_a_question_says_whom_it_asks_about(query: str, kind: str, who: set[str]) -> None:
    holder = of_query(query)
    assert holder.kind == kind and set(holder.who) == who


def test_agreement_both_ways_with_look_alikes() -> None:
    mine, partners = "User is a nurse on a cardiac ward.", "User's partner Sam is a nurse on nights."
    turn = "Melanie: I'm a nurse too, on a cardiac ward."
    me, partner = of_query("am I a nurse?"), of_query("what does my partner do?")
    assert agreement(me, of_memory(mine), mine) == 1.0
    assert agreement(me, of_memory(partners), partners) == -1.0
    assert agreement(me, of_memory(turn), turn) == -1.0
    assert agreement(partner, of_memory(partners), partners) == 1.0
    assert agreement(partner, of_memory(mine), mine) == -1.0
    assert agreement(of_query("what does Sam do?"), of_memory(mine), mine) == -1.0
