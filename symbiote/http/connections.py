"""Connections that hold the server without asking anything: closed in seconds, and never more than a cap.

uvicorn (0.54) closes a keep-alive connection left idle after a response, but it has no timer for
a request head that never completes, so a stranger who opens sockets and sends nothing keeps them
until the server runs out of open files; its `limit_concurrency` answers 503 to every request once
reached, the owner's included. `ConnectionGuard` wraps uvicorn's own HTTP protocol instead:

- a connection must send a complete request head within SYMBIOTE_HEADER_TIMEOUT_SECONDS of
  opening (or of its previous answer, after the keep-alive time), or it is closed;
- at most SYMBIOTE_MAX_CONNECTIONS are kept open: past it, the oldest connections that have not
  sent a request head yet are closed (each new one gets GRACE_SECONDS to send one first), and
  idle ones between requests only when there are none of those. Whoever sends a request
  promptly, as the owner's clients do, is served while strangers hold sockets; a connection with
  a request in progress is never closed for another. Beyond what the open-file limit allows, a new connection
  is closed at once, so the server never runs out of files.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import time
from collections import OrderedDict
from typing import Any

from uvicorn.protocols.http.auto import AutoHTTPProtocol

log = logging.getLogger(__name__)

FILES_KEPT = 256  # open files left for everything but connections (the store, the model, logs, the sign-in database)
GRACE_SECONDS = 0.25  # a new connection's time to send its request head before it may be closed for another
WARN_EVERY = 60.0


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
    """The open connections; those waiting for their first request head and those idle between
    requests, each oldest first with a deadline."""

    def __init__(self, caps: tuple[int, int], head_seconds: float, idle_seconds: float) -> None:
        """`caps`: the connections kept and the most ever open (`connection_cap`). `idle_seconds`:
        how long a connection may wait after an answer until its next head is complete (uvicorn's
        keep-alive time plus `head_seconds`)."""
        self.max_connections, self.hard_limit = caps
        self.head_seconds = head_seconds
        self.idle_seconds = idle_seconds
        self._open: dict[Any, float] = {}  # connection: when it opened
        self._fresh: OrderedDict[Any, asyncio.TimerHandle] = OrderedDict()  # no request head yet
        self._idle: OrderedDict[Any, asyncio.TimerHandle] = OrderedDict()  # between requests
        self._sweep: asyncio.TimerHandle | None = None
        self._warned = 0.0
        self.timed_out = 0
        self.evicted = 0
        self.refused = 0

    def opened(self, connection: Any) -> None:
        if len(self._open) >= self.hard_limit:
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
        for waiting in (self._fresh, self._idle):
            timer = waiting.pop(connection, None)
            if timer is not None:
                timer.cancel()

    def answered(self, connection: Any) -> None:
        if connection in self._open:
            self._wait(self._idle, connection, self.idle_seconds)

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

    def _trim(self) -> None:
        """Back to the cap: the oldest connections without a request head, past their grace; idle
        ones between requests only when there are none; again later if young ones stand over it."""
        self._sweep = None
        loop = asyncio.get_running_loop()
        settled = loop.time() - GRACE_SECONDS
        while len(self._open) > self.max_connections:
            oldest = next(iter(self._fresh), None)
            if oldest is not None and self._open[oldest] <= settled:
                connection = oldest
            elif oldest is None and self._idle:  # idle ones only when no stranger is left to close
                connection = next(iter(self._idle))
            else:
                break
            self.closed(connection)
            self.evicted += 1
            _close(connection)
        self._warn()
        if len(self._open) > self.max_connections and self._fresh:
            wait = self._open[next(iter(self._fresh))] - settled
            self._sweep = loop.call_later(max(wait, 0.01), self._trim)

    def _warn(self) -> None:
        now = time.monotonic()
        if now - self._warned >= WARN_EVERY:
            self._warned = now
            log.warning(
                "%d connections open (SYMBIOTE_MAX_CONNECTIONS %d): %d closed so far for newer ones, %d refused "
                "at the open-file limit, %d closed without a request head in time",
                len(self._open),
                self.max_connections,
                self.evicted,
                self.refused,
                self.timed_out,
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
    """Mixed into uvicorn's HTTP protocol class: tells the guard when a connection opens, when a
    request head is complete (uvicorn then starts a new request cycle), when an answer is done, and
    when the connection is gone."""

    guard: ConnectionGuard
    cycle: Any
    transport: Any

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)  # type: ignore[misc]
        self._seen_cycle = self.cycle
        self.guard.opened(self)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)  # type: ignore[misc]
        self._notice_head()

    def _notice_head(self) -> None:
        if self.cycle is not self._seen_cycle:
            self._seen_cycle = self.cycle
            self.guard.head_arrived(self)

    def on_response_complete(self) -> None:
        super().on_response_complete()  # type: ignore[misc]
        self._notice_head()  # a pipelined request may have started
        if self.transport.is_closing():
            return
        if self.cycle is None or self.cycle.response_complete:
            self.guard.answered(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.guard.closed(self)
        super().connection_lost(exc)  # type: ignore[misc]


def guarded_protocol(guard: ConnectionGuard) -> type:
    """uvicorn's HTTP protocol (httptools when installed, else h11) under `guard`, for `uvicorn.Config(http=)`."""
    return type(f"Guarded{AutoHTTPProtocol.__name__}", (_Guarded, AutoHTTPProtocol), {"guard": guard})
