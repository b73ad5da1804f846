"""Time as memories and turns carry it: microseconds since the epoch, shown as ISO-8601 UTC with Z.

One place for the conversions, so a memory's timestamp, a turn's `ts` and a paging cursor
are read and written alike.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone


def now_us() -> int:
    return time.time_ns() // 1000


def iso_utc(micros: int) -> str:
    return datetime.fromtimestamp(micros / 1e6, tz=timezone.utc).isoformat(timespec="microseconds").replace(
        "+00:00", "Z"
    )


def instant_us(text: str) -> int:
    """An ISO-8601 date/time (a trailing Z allowed; without a zone it is UTC) in microseconds.

    Raises ValueError when `text` is not one, so each caller can say which argument was wrong.
    """
    moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp() * 1_000_000)
