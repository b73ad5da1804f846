"""Reading an import file line by line without ever holding more than one bounded line.

`for line in file` reads a whole line into memory however long it is: one 1 GiB line grew the
server by 3.4 GiB. `read_lines` asks for at most MAX_LINE_BYTES at a time; a line longer than that
is skipped in chunks (never held whole) and reported as too long, and the next line is read as usual.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO

# a memory of the default content size, JSON-escaped, with its vectors, fits many times
MAX_LINE_BYTES = 8 * 1024 * 1024
SKIP_CHUNK = 1024 * 1024


def line_cap(max_content_bytes: int) -> int:
    """The longest line read for a content cap (SYMBIOTE_MAX_CONTENT_BYTES): a memory at a raised
    cap still fits with its text escaped and its vectors (about one per 400 bytes of text, 2 KB of
    base64 each); never below MAX_LINE_BYTES."""
    return max(MAX_LINE_BYTES, 32 * max_content_bytes)


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
