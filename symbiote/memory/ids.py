"""Memory ids: `mem_<digits>`, sortable by creation time and unique across bursts and processes."""

from __future__ import annotations

import re
import secrets
import threading
import time

# ASCII digits only: `\d` takes any Unicode digit (fullwidth, Arabic-Indic), and `$` a trailing newline.
ID_PATTERN = re.compile(r"mem_[0-9]{20}")


class IdGenerator:
    """Microseconds since the epoch (16 digits, monotonic in this process) + 4 random digits.

    The monotonic part keeps ids from one process strictly increasing even for thousands of
    stores in one second; the random tail keeps two instances sharing a Chroma server apart.
    Fixed width, so string order is chronological order.
    """

    def __init__(self) -> None:
        self._last = 0
        self._lock = threading.Lock()

    def new(self) -> str:
        with self._lock:
            self._last = max(time.time_ns() // 1000, self._last + 1)
            micros = self._last
        return f"mem_{micros:016d}{secrets.randbelow(10_000):04d}"


def is_memory_id(value: str) -> bool:
    return ID_PATTERN.fullmatch(value) is not None


def created_us(memory_id: str) -> int:
    """The creation time a memory id carries (its 16 digits after `mem_`), in microseconds."""
    return int(memory_id[4:20])
