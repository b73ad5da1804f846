"""An asyncio lock per key, created on demand and dropped when nobody holds or waits for it.

`hold_all` takes several at once, always in the same order, so two changes holding overlapping
sets never wait on each other in a circle; `one_writer` is a change that finds, once it holds what
it asked for and has read it, that it must hold more (a link's third memory) and starts over.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar

from symbiote.errors import StoreUnavailableError

T = TypeVar("T")
MAX_WIDENINGS = 8  # a change whose records keep naming new ones is refused past this many rounds


class KeyedLock:
    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    @contextlib.asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        lock, users = self._locks.get(key, (asyncio.Lock(), 0))
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[key]
            if users == 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)

    @contextlib.asynccontextmanager
    async def hold_all(self, keys: Iterable[str]) -> AsyncIterator[None]:
        """Hold every one of `keys`, taken in sorted order (the one order every holder uses)."""
        async with contextlib.AsyncExitStack() as stack:
            for key in sorted(set(keys)):
                await stack.enter_async_context(self.hold(key))
            yield

    def held(self, key: str) -> bool:
        """Whether someone holds `key` now (or waits for it)."""
        return key in self._locks

    def __len__(self) -> int:
        return len(self._locks)


@dataclass(frozen=True)
class Widen:
    """What a change run by `one_writer` returns when it found records it must hold too before it writes."""

    keys: frozenset[str]


async def one_writer(
    locks: KeyedLock, keys: Iterable[str], change: Callable[[frozenset[str]], Awaitable[T | Widen]]
) -> T:
    """Run `change(held)` holding `keys`; each time it answers `Widen`, again holding those as well
    (it reads everything again: what it read before holding it may have changed)."""
    held = frozenset(keys)
    for _round in range(MAX_WIDENINGS):
        async with locks.hold_all(held):
            done = await change(held)
        if not isinstance(done, Widen):
            return done
        assert not done.keys <= held, sorted(done.keys)  # a change widens to what it does not hold yet
        held |= done.keys
    raise StoreUnavailableError(
        "The memories kept changing while this change read them; nothing was changed. Try again."
    )
