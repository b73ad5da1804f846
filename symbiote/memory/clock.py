"""Time as memories and turns carry it: microseconds since the epoch, shown as ISO-8601 UTC with Z.

One place for the conversions, so a memory's timestamp, a turn's `ts` and a paging cursor
are read and written alike.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def now_us() -> int:
    return time.time_ns() // 1000


def iso_utc(micros: int) -> str:
    """Microseconds since the epoch as ISO-8601 UTC with Z, to the microsecond. Integer arithmetic,
    not a float timestamp, so what an export writes reads back as the same microsecond."""
    return (_EPOCH + micros * _MICROSECOND).isoformat(timespec="microseconds").replace("+00:00", "Z")


def instant_us(text: str) -> int:
    """An ISO-8601 date/time (a trailing Z allowed; without a zone it is UTC) in microseconds, exactly.

    Raises ValueError when `text` is not one, so each caller can say which argument was wrong. The
    one parser of instants: arguments, paging cursors, turn times and import files all read alike.
    """
    moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // _MICROSECOND
