"""The size of a request head, measured as it arrives: 431 (or 414) before the parser holds it.

httptools (llhttp) sets no limit of its own: it gathers a header value however long it grows, so
ten sockets each sending a 30 MB header held 400 MB. `HeadMeter` counts the bytes of the head
in progress and of its current line as they arrive, before they reach the parser, and says when
one is over SYMBIOTE_MAX_HEADER_BYTES (the whole head) or SYMBIOTE_MAX_HEADER_LINE_BYTES (the
request line or one header line). The connection is then answered (`refusal`) and closed.
"""

from __future__ import annotations

from http import HTTPStatus

TOTAL_SETTING = "SYMBIOTE_MAX_HEADER_BYTES"
LINE_SETTING = "SYMBIOTE_MAX_HEADER_LINE_BYTES"


class HeadMeter:
    """The bytes of one request head so far, up to its blank line; `feed` says when it is too large."""

    def __init__(self, max_bytes: int, max_line_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.max_line_bytes = max_line_bytes
        self.reset()

    def reset(self) -> None:
        """A new head starts with the next byte."""
        self.size = 0
        self.line = 0  # bytes of the current line so far
        self.line_blank = True  # nothing but CR in it so far
        self.lines = 0  # complete non-blank lines
        self.ended = False  # the blank line after the head was seen: what follows is a body

    def feed(self, data: bytes) -> HTTPStatus | None:
        """Count `data`; the status to refuse with when the head or a line is over its cap."""
        start = 0
        while not self.ended and start < len(data):
            newline = data.find(b"\n", start)
            end = len(data) if newline < 0 else newline + 1
            content = data[start : end if newline < 0 else newline]
            self.line += end - start
            self.size += end - start
            if self.line_blank and content.strip(b"\r"):
                self.line_blank = False
            if self.line > self.max_line_bytes:
                return (
                    HTTPStatus.REQUEST_URI_TOO_LONG if self.lines == 0 else HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE
                )
            if self.size > self.max_bytes:
                return HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE
            if newline >= 0:
                if not self.line_blank:
                    self.lines += 1
                elif self.lines:  # the blank line after the head (blank lines before one are skipped)
                    self.ended = True
                self.line, self.line_blank = 0, True
            start = end
        return None


def refusal(status: HTTPStatus, max_bytes: int, max_line_bytes: int) -> bytes:
    """The whole answer to a head over its cap, written before the connection is closed."""
    if status is HTTPStatus.REQUEST_URI_TOO_LONG:
        text = f"The request line is longer than {max_line_bytes} bytes ({LINE_SETTING}).\n"
    else:
        text = (
            f"Request heads are limited to {max_bytes} bytes ({TOTAL_SETTING}), "
            f"and each header line to {max_line_bytes} ({LINE_SETTING}).\n"
        )
    body = text.encode()
    head = (
        f"HTTP/1.1 {status.value} {status.phrase}\r\n"
        "content-type: text/plain; charset=utf-8\r\n"
        f"content-length: {len(body)}\r\n"
        "connection: close\r\n\r\n"
    )
    return head.encode() + body
