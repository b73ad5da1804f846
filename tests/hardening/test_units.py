"""Hardening rules that need no server: loopback by address, the time parser over any input.

The time parser gets a property test (hypothesis): whatever text a client sends as `after`,
`before` or `when`, the answer is an interval or a clear error, never an exception that would
surface as "Internal error".
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from symbiote.auth import AuthStore
from symbiote.auth.rates import RateBudget
from symbiote.config import Settings
from symbiote.errors import InvalidInputError
from symbiote.memory import timeparse, validation
from symbiote.platform_hosts import exposed, is_loopback
from tests.conftest import volume

# -- loopback is an address, never a prefix of a name ------------------------------------------


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("localhost", True),
        ("::1", True),
        ("[::1]", True),
        ("::ffff:127.0.0.1", True),
        ("LOCALHOST", True),
        ("127.0.0.1.nip.io", False),
        ("127.example.com", False),
        ("localhost.example.com", False),
        ("10.0.0.1", False),
        ("0.0.0.0", False),
        ("", False),
        ("[::2]", False),
        ("127.0.0.1:8000", False),
    ],
)
def test_loopback_is_decided_by_parsing_the_address(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_a_public_name_that_starts_with_127_is_exposed() -> None:
    assert exposed("127.0.0.1.nip.io", (), False)
    assert not exposed("127.0.0.2", (), False)


# -- the time parser -----------------------------------------------------------------------------

NOW = datetime(2026, 6, 15, 12, tzinfo=UTC)


def test_the_extremes_of_the_calendar_are_searchable_or_clearly_refused() -> None:
    first, last = timeparse.parse("0001-01-01"), timeparse.parse("9999-12-31")
    assert first.start.year == 1 and last.end == timeparse.END_OF_TIME
    assert last.start_us > first.start_us
    assert validation.time_window("0001-01-01", "9999-12-31", None) == (first.start_us, last.start_us)
    assert timeparse.parse("9999").end == timeparse.END_OF_TIME
    for out_of_range in (
        "0001-01-01T00:00+01:00",
        "9999-12-31T23:59-01:00",
        "99999999999 days ago",
        "5000 years ago",
        "past 999999999 weeks",
        "1000000000000 months ago",
    ):
        with pytest.raises(timeparse.TimePhraseError, match="outside the dates"):
            timeparse.parse(out_of_range, NOW)
    assert validation.before("0001-01-01T00:00:00+05:00") < 0  # a paging cursor that early is still a cursor


def test_a_year_and_month_and_weeks_ago_name_their_whole_period() -> None:
    february = timeparse.parse("2026-02", NOW)
    assert (february.start, february.end) == (datetime(2026, 2, 1, tzinfo=UTC), datetime(2026, 3, 1, tzinfo=UTC))
    assert timeparse.parse("9999-12", NOW).end == timeparse.END_OF_TIME  # ends at the calendar's end, no overflow
    with pytest.raises(timeparse.TimePhraseError):
        timeparse.parse("2026-13", NOW)
    two_weeks = timeparse.parse("2 weeks ago", NOW)  # NOW is a Monday: the week that began 14 days before
    assert (two_weeks.start, two_weeks.end) == (datetime(2026, 6, 1, tzinfo=UTC), datetime(2026, 6, 8, tzinfo=UTC))


PHRASE_PARTS = st.sampled_from(
    [
        "",
        "in ",
        "last ",
        "the past ",
        "since ",
        "ago",
        " days",
        " weeks",
        " months",
        " years",
        "-",
        ":",
        "T",
        "Z",
        "+14:00",
        "-12:00",
        "march ",
        "monday",
        "today",
        "yesterday",
        "this ",
        "week",
        "month",
        "year",
        " ",
    ]
)
NUMBERS = st.integers(min_value=-(10**30), max_value=10**30).map(str) | st.integers(0, 9999).map(lambda n: f"{n:04d}")
PHRASES = st.lists(PHRASE_PARTS | NUMBERS, max_size=8).map("".join) | st.text(max_size=60)


# Volume (tests/conftest.py: volume): the phrases drawn from the run's seed; all of them under --soak.
PHRASINGS = volume(2000, 300, f"{__name__}:phrases")
WINDOWS = volume(800, 150, f"{__name__}:windows")


@pytest.mark.volume
@seed(PHRASINGS.seed)
@settings(max_examples=PHRASINGS.count, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(phrase=PHRASES)
def test_any_time_phrase_is_an_interval_or_a_clear_error(phrase: str) -> None:
    try:
        interval = timeparse.parse(phrase, NOW)
    except timeparse.TimePhraseError as exc:
        assert str(exc)
        return
    assert interval.start <= interval.end
    assert isinstance(interval.start_us, int) and isinstance(interval.end_us, int)


@pytest.mark.volume
@seed(WINDOWS.seed)
@settings(max_examples=WINDOWS.count, deadline=None, database=None)
@given(after=PHRASES | st.none(), before=PHRASES | st.none(), when=PHRASES | st.none())
def test_time_filters_raise_only_invalid_input(after: str | None, before: str | None, when: str | None) -> None:
    try:
        low, high = validation.time_window(after, before, when)
    except InvalidInputError as exc:
        assert str(exc)
        return
    assert low is None or high is None or low < high
    try:
        validation.before(before)
    except InvalidInputError:
        pass


# -- registrations: budgets and a short life for those never approved ---------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_budgets_per_address_and_overall() -> None:
    clock = Clock()
    budget = RateBudget(2, 60.0, 3, 3600.0, clock=clock)
    assert [budget.admit("a"), budget.admit("a")] == [0, 0] and budget.admit("a") == 60
    assert budget.admit("b") == 0 and budget.admit("c") == pytest.approx(3600)
    budget.refund("b")  # an invalid request gives its count back
    assert budget.admit("c") == 0
    clock.now += 61
    assert budget.admit("a") == pytest.approx(3600 - 61)  # per address free again, the total is not


def test_registrations_never_approved_expire_within_the_hour(tmp_path: Path) -> None:
    clock = Clock()
    store = AuthStore(tmp_path / "auth.sqlite3", clock=clock)
    store.register_client("waiting", {"client_id": "waiting", "redirect_uris": ["http://127.0.0.1/cb"]}, None)
    clock.now += 3601
    store.register_client("later", {"client_id": "later", "redirect_uris": ["http://127.0.0.1/cb"]}, None)  # prunes
    assert store.get_client("waiting") is None and store.get_client("later") is not None


def test_the_limits_have_their_documented_defaults() -> None:
    settings = Settings.from_env({})
    assert settings.max_content_bytes == validation.MAX_CONTENT_BYTES == 100_000
    assert (settings.open_registration, settings.registrations_per_minute, settings.registrations_per_hour) == (
        True,
        10,
        100,
    )
    assert settings.client_metadata_documents and not settings.metadata_loopback
