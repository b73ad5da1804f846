"""Connections that hold the server without asking anything: closed in seconds, and never more than a cap.

uvicorn (0.54) closes a keep-alive connection left idle after a response, but it has no timer for
a request head that never completes, so a stranger who opens sockets and sends nothing keeps them
until the server runs out of open files; its `limit_concurrency` answers 503 to every request once
reached, the owner's included. `ConnectionGuard` wraps uvicorn's own HTTP protocol instead:

- a connection must send a complete request head within SYMBIOTE_HEADER_TIMEOUT_SECONDS of
  opening (or of its previous answer, after the keep-alive time), or it is closed;
- a head over SYMBIOTE_MAX_HEADER_BYTES, or with a line over SYMBIOTE_MAX_HEADER_LINE_BYTES, is
  answered 431 (414 for the request line) and the connection closed (`symbiote.http.request_head`);
- once the head is in, the body must keep coming: a connection that sends none of it for
  SYMBIOTE_BODY_TIMEOUT_SECONDS is closed (time the app leaves a full buffer unread is not counted);
- at most SYMBIOTE_MAX_CONNECTIONS are kept open: past it, the oldest connections still sending
  their request (no complete head, or a body not all there) are closed, each given GRACE_SECONDS
  first, and idle ones between requests only when there are none of those. Whoever sends a
  request promptly, as the owner's clients do, is served while strangers hold sockets; a
  connection whose request has fully arrived is never closed for another. At the open-file limit
  a new connection takes the place of such a one, or is closed at once when there is none, so the
  server never runs out of files.

The HTTP protocol is uvicorn's httptools one (a dependency): the head is measured between its
parser's callbacks. A pipelined head that starts in the same read as the end of the message
before it is measured from the next read (one read, at most 256 KiB, past the cap).
"""

from __future__ import annotations

import asyncio
import logging
import resource
import time
from collections import OrderedDict
from http import HTTPStatus
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from symbiote.http.request_head import HeadMeter, refusal

log = logging.getLogger(__name__)

FILES_KEPT = 256  # open files left for everything but connections (the store, the model, logs, the sign-in database)
GRACE_SECONDS = 0.25  # a new connection's time to send its request head before it may be closed for another
WARN_EVERY = 60.0
DRAIN_SECONDS = 2.0  # after a 431, what the client still sends is read and dropped this long, so it reads the answer


def raise_file_limit() -> int:
    """Raise this process's open-file limit to its hard limit; the soft limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError) as exc:
            log.warning("the open-file limit stays at %d: %s", soft, exc)
    return soft


def connection_cap(configured: int, file_limit: int) -> tuple[int, int]:
    """The connections kept open (as configured, within the file limit) and the most ever open at once."""
    hard = max(32, file_limit - FILES_KEPT)
    return min(configured, hard), hard


class ConnectionGuard:
    """The open connections: those waiting for a complete request head, those sending a body, and
    those idle between requests, each oldest first with a deadline."""

    def __init__(
        self,
        caps: tuple[int, int],
        head_seconds: float,
        idle_seconds: float,
        body_seconds: float = 10.0,
        head_caps: tuple[int, int] = (64 * 1024, 16 * 1024),
    ) -> None:
        """`caps`: the connections kept and the most ever open (`connection_cap`). `idle_seconds`:
        how long a connection may wait after an answer until its next head is complete (uvicorn's
        keep-alive time plus `head_seconds`). `body_seconds`: the longest silence within a body.
        `head_caps`: a request head's bytes, and one line's."""
        self.max_connections, self.hard_limit = caps
        self.head_seconds = head_seconds
        self.idle_seconds = idle_seconds
        self.body_seconds = body_seconds
        self.head_caps = head_caps
        self._open: dict[Any, float] = {}  # connection: when it opened
        self._fresh: OrderedDict[Any, asyncio.TimerHandle] = OrderedDict()  # no request head yet
        self._bodies: OrderedDict[Any, asyncio.TimerHandle] = OrderedDict()  # head in, body still coming
        self._body_began: dict[Any, float] = {}
        self._idle: OrderedDict[Any, asyncio.TimerHandle] = OrderedDict()  # between requests
        self._sweep: asyncio.TimerHandle | None = None
        self._warned = 0.0
        self.timed_out = 0
        self.bodies_timed_out = 0
        self.heads_refused = 0
        self.evicted = 0
        self.refused = 0

    def opened(self, connection: Any) -> None:
        if len(self._open) >= self.hard_limit and not self._evict_one(asyncio.get_running_loop().time()):
            self.refused += 1
            self._warn()
            _close(connection)
            return
        loop = asyncio.get_running_loop()
        self._open[connection] = loop.time()
        self._wait(self._fresh, connection, self.head_seconds)
        if len(self._open) > self.max_connections and self._sweep is None:
            self._sweep = loop.call_later(GRACE_SECONDS, self._trim)

    def head_arrived(self, connection: Any) -> None:
        for waiting in (self._fresh, self._idle, self._bodies):
            timer = waiting.pop(connection, None)
            if timer is not None:
                timer.cancel()
        self._body_began.pop(connection, None)

    def body_coming(self, connection: Any) -> None:
        """Part of a body arrived (or none yet after the head): it has `body_seconds` for more."""
        if connection not in self._open:
            return
        loop = asyncio.get_running_loop()
        timer = self._bodies.get(connection)
        if timer is None:
            self._body_began[connection] = loop.time()
        else:
            timer.cancel()
        self._bodies[connection] = loop.call_later(self.body_seconds, self._body_expired, connection)

    def body_complete(self, connection: Any) -> None:
        timer = self._bodies.pop(connection, None)
        if timer is not None:
            timer.cancel()
        self._body_began.pop(connection, None)

    def answered(self, connection: Any) -> None:
        if connection in self._open:
            self._wait(self._idle, connection, self.idle_seconds)

    def head_refused(self, connection: Any) -> None:
        """Answered 431: closed after DRAIN_SECONDS (or when the client leaves), and never kept for another."""
        if connection in self._open:
            self._wait(self._fresh, connection, DRAIN_SECONDS)
        self.heads_refused += 1
        self._warn()

    def closed(self, connection: Any) -> None:
        self._open.pop(connection, None)
        self.head_arrived(connection)

    @property
    def open_count(self) -> int:
        return len(self._open)

    def _wait(self, waiting: OrderedDict[Any, asyncio.TimerHandle], connection: Any, seconds: float) -> None:
        self.head_arrived(connection)
        waiting[connection] = asyncio.get_running_loop().call_later(seconds, self._expire, connection)

    def _expire(self, connection: Any) -> None:
        self.closed(connection)
        self.timed_out += 1
        _close(connection)

    def _body_expired(self, connection: Any) -> None:
        if connection.reading_paused():  # the app has not taken what arrived: not the client's delay
            self.body_coming(connection)
            return
        self.closed(connection)
        self.bodies_timed_out += 1
        _close(connection)

    def _evict_one(self, now: float) -> bool:
        """Close the oldest connection still sending its request (past its grace), else the oldest
        idle one; False when every one has a request in progress."""
        settled = now - GRACE_SECONDS
        fresh = next(iter(self._fresh), None)
        body = next(iter(self._bodies), None)
        if fresh is not None and self._open[fresh] <= settled:
            connection = fresh
        elif body is not None and self._body_began[body] <= settled:
            connection = body
        elif fresh is None and body is None and self._idle:  # idle ones only when no stranger is left to close
            connection = next(iter(self._idle))
        else:
            return False
        self.closed(connection)
        self.evicted += 1
        _close(connection)
        return True

    def _trim(self) -> None:
        """Back to the cap (`_evict_one`); again later if young ones stand over it."""
        self._sweep = None
        loop = asyncio.get_running_loop()
        while len(self._open) > self.max_connections and self._evict_one(loop.time()):
            pass
        self._warn()
        began = [self._open[c] for c in self._fresh] + [self._body_began[c] for c in self._bodies]
        if len(self._open) > self.max_connections and began:
            wait = min(began) - (loop.time() - GRACE_SECONDS)
            self._sweep = loop.call_later(max(wait, 0.01), self._trim)

    def _warn(self) -> None:
        now = time.monotonic()
        if now - self._warned >= WARN_EVERY:
            self._warned = now
            log.warning(
                "%d connections open (SYMBIOTE_MAX_CONNECTIONS %d): %d closed so far for newer ones, %d refused "
                "at the open-file limit, %d closed without a request head in time, %d with a body stalled, "
                "%d request heads over the cap",
                len(self._open),
                self.max_connections,
                self.evicted,
                self.refused,
                self.timed_out,
                self.bodies_timed_out,
                self.heads_refused,
            )


def _close(connection: Any) -> None:
    """Close at once: what is left unsent after this long is for a peer that is not reading."""
    transport = connection.transport
    if transport.is_closing():
        return
    if transport.get_write_buffer_size():
        transport.abort()
    else:
        transport.close()


class _Guarded:
    """Mixed into uvicorn's httptools protocol class: measures each request head before the parser
    sees it, and tells the guard when a connection opens, when a head is complete, how its body
    comes, when an answer is done, and when the connection is gone. The parser calls the
    `on_*` methods during `data_received`."""

    guard: ConnectionGuard
    cycle: Any
    transport: Any
    flow: Any

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)  # type: ignore[misc]
        self._meter = HeadMeter(*self.guard.head_caps)
        self._in_body = False  # between the parser's head and the end of its message
        self._messages = 0  # messages the parser has finished
        self._refused = False
        self.guard.opened(self)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return  # answered 431: read and dropped until closed
        if not self._in_body:
            status = self._meter.feed(data)
            if status is not None:
                self._refuse(status)
                return
        messages = self._messages
        super().data_received(data)  # type: ignore[misc]
        if self._in_body or self._messages != messages or self._meter.ended:
            self._meter.reset()  # a head ended in this read: the next one is measured from the next read
        cycle = self.cycle
        if self._in_body and cycle is not None and not cycle.response_complete:
            self.guard.body_coming(self)

    def on_headers_complete(self) -> None:
        super().on_headers_complete()  # type: ignore[misc]
        self._in_body = True
        self.guard.head_arrived(self)

    def on_message_complete(self) -> None:
        super().on_message_complete()  # type: ignore[misc]
        self._in_body = False
        self._messages += 1
        self.guard.body_complete(self)

    def reading_paused(self) -> bool:
        """uvicorn stops reading while the app leaves a full body buffer unread."""
        return bool(self.flow.read_paused)

    def _refuse(self, status: HTTPStatus) -> None:
        """Answer the head over its cap and close: the rest of it is read and dropped, never parsed."""
        self._refused = True
        self.transport.write(refusal(status, *self.guard.head_caps))
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self.guard.head_refused(self)

    def on_response_complete(self) -> None:
        super().on_response_complete()  # type: ignore[misc]
        if self.transport.is_closing():
            return
        if self.cycle is None or self.cycle.response_complete:
            self.guard.answered(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.guard.closed(self)
        super().connection_lost(exc)  # type: ignore[misc]


def guarded_protocol(guard: ConnectionGuard) -> type:
    """uvicorn's httptools protocol under `guard`, for `uvicorn.Config(http=)`."""
    return type(f"Guarded{HttpToolsProtocol.__name__}", (_Guarded, HttpToolsProtocol), {"guard": guard})
