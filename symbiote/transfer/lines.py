"""Reading an import file line by line without ever holding more than one bounded line.

`for line in file` reads a whole line into memory however long it is: one 1 GiB line grew the
server by 3.4 GiB. `read_lines` asks for at most MAX_LINE_BYTES at a time; a line longer than that
is skipped in chunks (never held whole) and reported as too long, and the next line is read as usual.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO

MAX_LINE_BYTES = (
    8 * 1024 * 1024
)  # a memory at the largest content size, JSON-escaped, with its vectors, fits many times
SKIP_CHUNK = 1024 * 1024


def read_lines(stream: IO[bytes], cap: int = MAX_LINE_BYTES) -> Iterator[tuple[bytes | None, int]]:
    """Each line (None when it is longer than `cap` bytes) and the bytes it took in the file."""
    while True:
        line = stream.readline(cap + 1)
        if not line:
            return
        if len(line) <= cap or line.endswith(b"\n"):
            yield line, len(line)
            continue
        size = len(line)
        while True:  # the rest of the over-long line, a chunk at a time
            rest = stream.readline(SKIP_CHUNK)
            size += len(rest)
            if not rest or rest.endswith(b"\n"):
                break
        yield None, size
