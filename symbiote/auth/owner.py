"""The owner secret: how the single owner proves it is them on the consent page.

The secret is set at deploy time (SYMBIOTE_OWNER_SECRET, or SYMBIOTE_OWNER_SECRET_HASH made by
`symbiote owner-secret-hash` so the plain secret never sits in the app settings). Attempts are
checked with scrypt and compared in constant time, and `SignInLimiter` puts exponential backoff
in front of the check, so guessing is throttled before any hashing work is spent. `OwnerChecks`
is the one way an attempt is checked, wherever it is typed (the consent page, the console).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import anyio

from symbiote.auth_settings import SCRYPT_MAXMEM, parse_secret_hash  # the hash's format is a setting's
from symbiote.workers import PriorityExecutor

SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**14, 8, 1  # ~16 MiB per check: affordable behind a rate limit
CONCURRENT_CHECKS = 2  # scrypt checks at once, for the whole server: bounded work, whatever arrives


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _scrypt(secret: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    return hashlib.scrypt(secret.encode("utf-8"), salt=salt, n=n, r=r, p=p, maxmem=SCRYPT_MAXMEM, dklen=32)


def hash_secret(secret: str) -> str:
    """`scrypt$n$r$p$salt$hash`, the value for SYMBIOTE_OWNER_SECRET_HASH."""
    salt = os.urandom(16)
    return f"scrypt${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}${_b64(salt)}${_b64(_scrypt(secret, salt, SCRYPT_N, SCRYPT_R, SCRYPT_P))}"


class OwnerSecret:
    """Checks an attempt against the configured secret: scrypt, then a constant-time compare."""

    def __init__(self, secret: str = "", secret_hash: str = "") -> None:
        if secret_hash:
            self._n, self._r, self._p, self._salt, self._digest = parse_secret_hash(secret_hash)
        elif secret:
            self._n, self._r, self._p, self._salt = SCRYPT_N, SCRYPT_R, SCRYPT_P, os.urandom(16)
            self._digest = _scrypt(secret, self._salt, self._n, self._r, self._p)
        else:
            self._digest = b""

    @property
    def configured(self) -> bool:
        return bool(self._digest)

    def verify(self, attempt: str) -> bool:
        """Blocking (scrypt is deliberately slow): call it from a worker thread."""
        if not self._digest or not attempt or len(attempt) > 1024:
            return False
        return hmac.compare_digest(_scrypt(attempt, self._salt, self._n, self._r, self._p), self._digest)


@dataclass
class _Source:
    failures: int = 0
    locked_until: float = 0.0


@dataclass
class SignInLimiter:
    """Exponential backoff on wrong owner secrets, per source address, and a global slow-down.

    A source (an address, or an IPv6 /64) gets `free_failures` wrong attempts, then waits 1 s,
    2 s, 4 s ... (at most `max_delay`) after each further one. Addresses are cheap behind proxies
    and botnets, so the server also counts every failure: once `global_max` have been seen within
    `global_window` seconds it is on alert, and then each source gets a single free attempt before
    its backoff starts, and every attempt waits `alert_delay` seconds before it is checked. No one
    is ever locked out by someone else's failures: the owner, from an address that has not failed,
    is checked (after the delay) and gets in with the right secret. While a source is locked its
    attempts are refused without checking the secret (no guess is tested, no hashing work is
    spent); existing tokens keep working throughout.
    """

    free_failures: int = 5
    max_delay: float = 900.0
    global_max: int = 30
    global_window: float = 900.0
    alert_free_failures: int = 1
    alert_delay: float = 1.0
    max_sources: int = 10_000
    clock: Callable[[], float] = field(default=time.monotonic, repr=False)
    _sources: dict[str, _Source] = field(default_factory=dict, repr=False)
    _recent: deque[float] = field(default_factory=deque, repr=False)

    def _now(self) -> float:
        return self.clock()

    def on_alert(self) -> bool:
        """Whether `global_max` failures or more were seen within the last `global_window` seconds."""
        now = self._now()
        while self._recent and self._recent[0] <= now - self.global_window:
            self._recent.popleft()
        return len(self._recent) >= self.global_max

    def slowdown(self) -> float:
        """Seconds every attempt waits before its check: `alert_delay` while on alert, else 0."""
        return self.alert_delay if self.on_alert() else 0.0

    def retry_after(self, source: str) -> float:
        """Seconds until `source` may try again (0: it may try now). Only its own failures count."""
        state = self._sources.get(source)
        return max(0.0, state.locked_until - self._now()) if state is not None else 0.0

    def failure(self, source: str) -> None:
        alert = self.on_alert()
        now = self._now()
        self._recent.append(now)
        while len(self._recent) > self.global_max * 4:  # enough to know the alert holds; bounded
            self._recent.popleft()
        if source not in self._sources and len(self._sources) >= self.max_sources:
            oldest = min(self._sources, key=lambda key: self._sources[key].locked_until)
            del self._sources[oldest]
        state = self._sources.setdefault(source, _Source())
        state.failures += 1
        over = state.failures - (self.alert_free_failures if alert else self.free_failures)
        if over >= 0:
            state.locked_until = now + min(2.0 ** min(over, 30), self.max_delay)

    def success(self, source: str) -> None:
        self._sources.pop(source, None)


class OwnerChecks:
    """Checks owner-secret attempts for every page that takes one, under one discipline.

    While many wrong secrets are arriving every attempt waits a little (the limiter's slow-down)
    and is then checked; one check per source (an address or IPv6 /64) at a time, the limit re-read
    inside; at most CONCURRENT_CHECKS checks in flight for the whole server. So a burst of parallel
    guesses cannot slip past the limiter together, and whatever arrives costs bounded CPU and memory.
    The checks run on threads of their own: scrypt's 16 MiB stays with those two threads' memory
    instead of spreading over every worker thread the server has.
    """

    def __init__(self, owner: OwnerSecret, limiter: SignInLimiter, concurrent: int = CONCURRENT_CHECKS) -> None:
        self.owner = owner
        self.limiter = limiter
        self._checks = anyio.Semaphore(concurrent)
        self._threads = PriorityExecutor(concurrent, "owner-secret")
        self._checking: set[str] = set()  # sources with a check under way

    def retry_after(self, source: str) -> float:
        """Seconds `source` must wait before an attempt is checked (0: now)."""
        return self.limiter.retry_after(source)

    async def check(self, source: str, secret: str) -> bool | None:
        """Whether `secret` is the owner's; None when `source` must wait first (nothing was checked)."""
        await anyio.sleep(self.limiter.slowdown())
        if source in self._checking:
            return None
        self._checking.add(source)
        try:
            async with self._checks:
                if self.limiter.retry_after(source) > 0:
                    return None
                correct = await self._threads.run("background", self.owner.verify, secret)
        finally:
            self._checking.discard(source)
        if correct:
            self.limiter.success(source)
        else:
            self.limiter.failure(source)
        return correct
