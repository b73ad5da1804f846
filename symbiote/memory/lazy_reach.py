"""A store's reach opened on first use, so a server answers `initialize` before Chroma and the model load.

The memory store and the conversation history share this rule: open on the first call that
needs the store, one opener at a time; a failure is reported to that call (and kept for health)
and the next call tries again, so fixing a permission needs no restart. A damaged store is the
exception: it is never retried by itself, an operator decides (`symbiote reset`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

from symbiote.embedding import MODEL_DIMENSION, MODEL_NAME
from symbiote.errors import StoreUnavailableError, worded
from symbiote.storage import HistoryStore, MemoryStore, Reach, StoreDamagedError

log = logging.getLogger(__name__)
S = TypeVar("S", MemoryStore, HistoryStore)


class LazyReach(Generic[S]):
    """`get()` returns the reach, opening the store with `open_reach(model, dimension)` in `opening` first."""

    def __init__(
        self,
        open_reach: Callable[[str, int], Reach[S]],
        opening: Callable[[Callable[[str, int], Reach[S]], str, int], Awaitable[Reach[S]]],
        name: str,
    ) -> None:
        self.reach: Reach[S] | None = None
        self.error: str | None = None  # why the store could not be opened, for health
        self._damaged: StoreDamagedError | None = None
        self._open_reach: Callable[[str, int], Reach[S]] = open_reach
        # How the blocking open runs: the owner's worker threads.
        self._opening: Callable[[Callable[[str, int], Reach[S]], str, int], Awaitable[Reach[S]]] = opening
        self._name = name  # "memory store", "conversation history": what the messages call it
        self._lock = asyncio.Lock()

    async def get(self) -> Reach[S]:
        if self.reach is not None:
            return self.reach
        if self._damaged is not None:  # never retried by itself: an operator decides (symbiote reset)
            raise self._damaged
        async with self._lock:
            if self.reach is None:
                self.reach = await self._open()
        return self.reach

    async def _open(self) -> Reach[S]:
        try:
            reach: Reach[S] = await self._opening(self._open_reach, MODEL_NAME, MODEL_DIMENSION)
        except StoreDamagedError as exc:
            self._damaged = exc
            self.error = str(exc)
            log.error("%s damaged: %s", self._name, exc)
            raise
        except Exception as exc:  # whatever else the opener raises: logged with its trace, reported in words
            if worded(exc):
                self.error = str(exc)
                log.error("%s unavailable: %s", self._name, exc)
                raise
            self.error = f"The {self._name} could not be opened: {exc}"
            log.exception("%s unavailable", self._name)
            raise StoreUnavailableError(self.error) from exc
        self.error = None
        log.info("%s opened", self._name)
        return reach
