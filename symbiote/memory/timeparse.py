"""Dates and relative time phrases for search filters: "yesterday", "last week", "in March".

Assistants relay what people say ("what did we decide last week?"), so `search_memory`
accepts these phrases as well as ISO dates. Every phrase becomes a half-open UTC interval
[start, end). Unknown phrases are an error that lists what is understood, never a guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from symbiote.errors import SymbioteError

MONTHS = {
    name: index
    for index, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
WEEKDAYS = {
    name: i for i, name in enumerate(["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"])
}
UNDERSTOOD = (
    "ISO dates or times (2026-03-05, 2026-03-05T14:00Z, 2026-03, 2026), today, yesterday, this/last week, "
    "this/last month, this/last year, N days/weeks/months/years ago, past/last N days/weeks/months, "
    "a month name (March, in March 2025), a weekday (Monday, last Friday)"
)


class TimePhraseError(SymbioteError):
    """A phrase that names no time; validation words it as an InvalidInputError for the caller."""


# The last instant a date can name: "9999-12-31" ends here instead of overflowing into year 10000.
END_OF_TIME = datetime.max.replace(tzinfo=UTC)


@dataclass(frozen=True)
class Interval:
    start: datetime
    end: datetime

    @property
    def start_us(self) -> int:
        return int(self.start.timestamp() * 1_000_000)

    @property
    def end_us(self) -> int:
        return int(self.end.timestamp() * 1_000_000)


def _day(d: date) -> datetime:
    return datetime(d.year, d.month, d.day, tzinfo=UTC)


def _month_start(year: int, month: int) -> datetime:
    years, month0 = divmod(month - 1, 12)  # "1000000 months ago" is arithmetic, not a million loops
    year += years
    if year > END_OF_TIME.year:
        return END_OF_TIME
    return datetime(year, month0 + 1, 1, tzinfo=UTC)


def _year_start(year: int) -> datetime:
    return END_OF_TIME if year > END_OF_TIME.year else datetime(year, 1, 1, tzinfo=UTC)


def _plus(moment: datetime, delta: timedelta) -> datetime:
    """`moment + delta`, ending at END_OF_TIME rather than overflowing past year 9999."""
    try:
        return moment + delta
    except OverflowError:
        if delta < timedelta(0):
            raise
        return END_OF_TIME


def _iso(text: str) -> Interval | None:
    if re.fullmatch(r"\d{4}", text):
        year = int(text)
        return Interval(_year_start(year), _year_start(year + 1))
    if m := re.fullmatch(r"(\d{4})-(\d{2})", text):
        year, month = int(m.group(1)), int(m.group(2))
        if not 1 <= month <= 12:
            return None
        return Interval(_month_start(year, month), _month_start(year, month + 1))
    try:
        moment = datetime.fromisoformat(text.upper().replace("Z", "+00:00") if "T" in text.upper() else text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    moment = moment.astimezone(UTC)  # "0001-01-01T00:00+01:00" is in year 0: refused below
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        return Interval(moment, _plus(moment, timedelta(days=1)))
    return Interval(moment, moment)


def parse(phrase: str, now: datetime | None = None) -> Interval:
    """The interval a phrase names. A bare moment (an ISO time) is an empty interval at it.

    Raises TimePhraseError for anything else, including dates outside years 1 to 9999.
    """
    try:
        return _parse(phrase, (now or datetime.now(UTC)).astimezone(UTC))
    except (OverflowError, ValueError):  # a TimePhraseError already says what was wrong: not caught here
        raise TimePhraseError(
            f"'{phrase[:100]}' is outside the dates that can be searched (years 1 to 9999)."
        ) from None


def _parse(phrase: str, now: datetime) -> Interval:
    text = " ".join(phrase.strip().lower().split())
    text = re.sub(r"^(in|on|during|from|since|of)\s+", "", text)
    if not text:
        raise TimePhraseError("empty time phrase")
    if (iso := _iso(text)) is not None:
        return iso
    today = _day(now.date())
    week_start = today - timedelta(days=today.weekday())
    simple = {
        "today": (today, _plus(today, timedelta(days=1))),
        "yesterday": (today - timedelta(days=1), today),
        "this week": (week_start, _plus(week_start, timedelta(days=7))),
        "last week": (week_start - timedelta(days=7), week_start),
        "this month": (_month_start(now.year, now.month), _month_start(now.year, now.month + 1)),
        "last month": (_month_start(now.year, now.month - 1), _month_start(now.year, now.month)),
        "this year": (_year_start(now.year), _year_start(now.year + 1)),
        "last year": (_year_start(now.year - 1), _year_start(now.year)),
    }
    if text in simple:
        return Interval(*simple[text])
    if m := re.fullmatch(r"(\d+|an?|one|two|three) (day|week|month|year)s? ago", text):
        n = _number(m.group(1))
        unit = m.group(2)
        if unit == "day":
            start = today - timedelta(days=n)
            return Interval(start, start + timedelta(days=1))
        if unit == "week":
            start = week_start - timedelta(days=7 * n)
            return Interval(start, start + timedelta(days=7))
        if unit == "month":
            return Interval(_month_start(now.year, now.month - n), _month_start(now.year, now.month - n + 1))
        return Interval(_year_start(now.year - n), _year_start(now.year - n + 1))
    if m := re.fullmatch(r"(?:the )?(?:past|last) (\d+|an?|one|two|three) (day|week|month|year)s?", text):
        n = _number(m.group(1))
        days = {"day": 1, "week": 7, "month": 30, "year": 365}[m.group(2)] * n
        return Interval(now - timedelta(days=days), now)
    if m := re.fullmatch(r"([a-z]+)(?: (\d{4}))?", text):
        word, year = m.group(1), m.group(2)
        if word in MONTHS:
            month = MONTHS[word]
            if year:
                y = int(year)
            else:  # the most recent such month, this one included
                y = now.year if month <= now.month else now.year - 1
            return Interval(_month_start(y, month), _month_start(y, month + 1))
    if m := re.fullmatch(r"(?:last )?([a-z]+)", text):
        if m.group(1) in WEEKDAYS:
            back = (today.weekday() - WEEKDAYS[m.group(1)]) % 7 or 7
            start = today - timedelta(days=back)
            return Interval(start, start + timedelta(days=1))
    raise TimePhraseError(f"'{phrase}' is not a date or time phrase I understand. Understood: {UNDERSTOOD}.")


def _number(word: str) -> int:
    return {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3}.get(word) or int(word)
