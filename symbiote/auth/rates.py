"""Request budgets for the endpoints anyone may call: per address, and for the whole server.

Client registration, client metadata fetches and authorization requests cost the server storage
or outbound requests, so each gets a budget: so many per address per window (an address is an
IPv4 address or an IPv6 /64, see `symbiote.auth.origin.address_key`) and optionally so many in
total. A request over budget is told how long to wait (429 with Retry-After); nothing already
admitted (a registered client, a sign-in in progress, a token) is ever taken back.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send


@dataclass
class RateBudget:
    """`per_address` requests per `address_window` seconds from one address, and `overall` requests
    per `overall_window` seconds in total (None: no total)."""

    per_address: int
    address_window: float
    overall: int | None = None
    overall_window: float = 3600.0
    max_addresses: int = 10_000
    clock: Callable[[], float] = field(default=time.monotonic, repr=False)
    _by_address: OrderedDict[str, deque[float]] = field(default_factory=OrderedDict, repr=False)
    _all: deque[float] = field(default_factory=deque, repr=False)

    def _trim(self, stamps: deque[float], window: float, now: float) -> None:
        while stamps and stamps[0] <= now - window:
            stamps.popleft()

    def wait(self, address: str) -> float:
        """Seconds until `address` may make another request (0: now); records nothing."""
        now = self.clock()
        wait = 0.0
        stamps = self._by_address.get(address)
        if stamps is not None:
            self._trim(stamps, self.address_window, now)
            if len(stamps) >= self.per_address:
                wait = stamps[0] + self.address_window - now
        if self.overall is not None:
            self._trim(self._all, self.overall_window, now)
            if len(self._all) >= self.overall:
                wait = max(wait, self._all[0] + self.overall_window - now)
        return max(0.0, wait)

    def admit(self, address: str) -> float:
        """0 and the request is counted, or the seconds to wait (nothing counted)."""
        wait = self.wait(address)
        if wait > 0:
            return wait
        now = self.clock()
        stamps = self._by_address.pop(address, None) or deque()
        stamps.append(now)
        self._by_address[address] = stamps  # most recently used last
        while len(self._by_address) > self.max_addresses:
            self._by_address.popitem(last=False)
        if self.overall is not None:
            self._all.append(now)
        return 0.0

    def refund(self, address: str) -> None:
        """Take back the latest count of `address` (its request turned out to be invalid)."""
        stamps = self._by_address.get(address)
        if stamps:
            stamps.pop()
            if self.overall is not None and self._all:
                self._all.pop()


def too_many(what: str, wait: float) -> JSONResponse:
    """429 with Retry-After (whole seconds, at least 1) and an OAuth-style error body."""
    seconds = max(1, math.ceil(wait))
    return JSONResponse(
        {"error": "too_many_requests", "error_description": f"Too many {what}; try again in {seconds} seconds."},
        status_code=429,
        headers={"Retry-After": str(seconds), "Cache-Control": "no-store"},
    )


class Budgeted:
    """An ASGI app behind a budget: 429 once `address()` (the caller's) has spent it."""

    def __init__(self, app: ASGIApp, budget: RateBudget, what: str, address: Callable[[], str]) -> None:
        self.app = app
        self.budget = budget
        self.what = what
        self.address = address

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        wait = self.budget.admit(self.address())
        if wait > 0:
            await too_many(self.what, wait)(scope, receive, send)
            return
        await self.app(scope, receive, send)
