"""A store opened on first use, so a server answers `initialize` before Chroma and the model load.

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
from symbiote.storage import StoreDamagedError

log = logging.getLogger(__name__)
S = TypeVar("S")


class LazyStore(Generic[S]):
    """`get()` returns the store, opening it with `open_store(model, dimension)` in `opening` first."""

    def __init__(
        self,
        open_store: Callable[[str, int], S],
        opening: Callable[[Callable[[str, int], S], str, int], Awaitable[S]],
        name: str,
    ) -> None:
        self.store: S | None = None
        self.error: str | None = None  # why the store could not be opened, for health
        self._damaged: StoreDamagedError | None = None
        self._open_store = open_store
        self._opening = opening  # how the blocking open runs: the owner's worker threads
        self._name = name  # "memory store", "conversation history": what the messages call it
        self._lock = asyncio.Lock()

    async def get(self) -> S:
        if self.store is not None:
            return self.store
        if self._damaged is not None:  # never retried by itself: an operator decides (symbiote reset)
            raise self._damaged
        async with self._lock:
            if self.store is None:
                self.store = await self._open()
        return self.store

    async def _open(self) -> S:
        try:
            store: S = await self._opening(self._open_store, MODEL_NAME, MODEL_DIMENSION)
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
        return store
