"""A memory's leading date stamp, in the forms assistants and exports write it; what is not a stamp stays."""

from __future__ import annotations

import pytest

from symbiote.embedding.stamp import body, canonical

SAID = "Melanie: I painted a sunrise."


@pytest.mark.parametrize(
    "stamp",
    [
        "1:56 pm on 8 May, 2023 ",
        "8 May 2023 ",
        "8 May, 2023 - ",
        "May 8th, 2023: ",
        "[2023-05-08 13:56] ",
        "2023-05-08T13:56:00Z | ",
        "Mon, 8 May 2023 13:56 - ",
        "(08/05/2023) ",
        "12.5.2023 ",
    ],
)
def test_a_leading_stamp_is_not_what_the_memory_says_and_reads_as_its_date(stamp: str) -> None:
    assert body(stamp + SAID) == SAID
    expected = "12 May 2023 " if stamp == "12.5.2023 " else "8 May 2023 "
    assert canonical(stamp + SAID) == expected + SAID


@pytest.mark.parametrize(
    "text",
    [
        SAID,
        "10:30 standup moved to the big room.",
        "2023 was the year we moved to Leeds.",
        "On 8 May 2023 we adopted a cat.",
        "8 May 2023",  # a stamp with nothing after it is all there is
        "Plays five-a-side football on Thursdays.",
    ],
)
def test_text_without_a_leading_stamp_is_left_whole(text: str) -> None:
    assert body(text) == text == canonical(text)


def test_a_stamp_that_names_no_real_date_is_left_out() -> None:
    assert canonical("45/13/2023 Bought a bike.") == "Bought a bike."
