"""The memory count (`symbiote.memory.count`) and the store's size (`symbiote.store.size`, bytes) as gauges.

The metric reader asks for them on its own thread, where the store must not be touched (its calls
belong to the engine's workers, and on a file share opening it needs the writer lease). So the
figures are kept here and read from the engine in the event loop after a tool call, at most once
per `REFRESH_SECONDS`, off the request's path; until the first tool call there is nothing to report.

The gauges are registered once per process and report the newest `StoreGauges`, held weakly: the
meter provider keeps every callback it is given for good, so a callback bound to an instance would
keep its engine (model, caches, store) alive after its runtime closed, one more at each app reload.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections.abc import Iterable
from typing import Protocol

from opentelemetry import metrics
from opentelemetry.metrics import CallbackOptions, Observation

from symbiote import __version__
from symbiote.errors import SymbioteError

log = logging.getLogger(__name__)

REFRESH_SECONDS = 10.0


class MeasuredStore(Protocol):
    """What the gauges read (the memory engine has both); telemetry sits below the engine."""

    async def count(self) -> int | None: ...

    async def store_size(self) -> int | None: ...


_current: weakref.ref[StoreGauges] | None = None  # whose figures the gauges report: the newest instance
_registered = False


def _latest() -> StoreGauges | None:
    return _current() if _current is not None else None


def _observe_count(_options: CallbackOptions) -> Iterable[Observation]:
    gauges = _latest()
    return [] if gauges is None or gauges.count is None else [Observation(gauges.count)]


def _observe_size(_options: CallbackOptions) -> Iterable[Observation]:
    gauges = _latest()
    return [] if gauges is None or gauges.size is None else [Observation(gauges.size)]


def _register() -> None:
    """The two gauges, once per process (OpenTelemetry has no way to take a callback back)."""
    global _registered
    if _registered:
        return
    _registered = True
    meter = metrics.get_meter("symbiote.memory", __version__)
    meter.create_observable_gauge(
        "symbiote.memory.count", callbacks=[_observe_count], unit="{memory}", description="Memories stored."
    )
    meter.create_observable_gauge(
        "symbiote.store.size", callbacks=[_observe_size], unit="By", description="Bytes the store takes on disk."
    )


class StoreGauges:
    """Keeps the latest figures of one engine; the newest instance is the one the gauges report."""

    def __init__(self, engine: MeasuredStore, refresh_seconds: float = REFRESH_SECONDS) -> None:
        self._engine = engine
        self._refresh_seconds = refresh_seconds
        self.count: int | None = None
        self.size: int | None = None
        self._checked = float("-inf")
        self._task: asyncio.Task[None] | None = None
        global _current
        _register()
        _current = weakref.ref(self)

    def refresh_soon(self) -> None:
        """In the event loop: start reading the figures again if they are older than the interval."""
        now = time.monotonic()
        if now - self._checked < self._refresh_seconds or (self._task is not None and not self._task.done()):
            return
        self._checked = now
        self._task = asyncio.get_running_loop().create_task(self.refresh())

    async def refresh(self) -> None:
        count = await self._engine.count()  # None while the store cannot be read (the engine logs why)
        if count is not None:
            self.count = count
        try:
            size = await self._engine.store_size()
        except SymbioteError as exc:  # a gauge left at its last figure; the engine logged the failure
            log.warning("store size not measured: %s", exc)
            return
        if size is not None:
            self.size = size
