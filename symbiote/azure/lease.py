"""Keeping the writer lease: hold it (renewing) or wait for it (retrying), and say who may write."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from symbiote.azure.share import FileShare, LeaseHeldError, LeaseLostError, LeaseRecord
from symbiote.errors import StoreUnavailableError

log = logging.getLogger(__name__)


class WriterLeaseError(StoreUnavailableError):
    """Writes are refused because this instance does not hold the writer lease."""


def default_holder() -> str:
    """Who we are, as other instances will see it: the replica (Container Apps) or host, plus the pid."""
    name = os.environ.get("CONTAINER_APP_REPLICA_NAME") or socket.gethostname()
    return f"{name}/pid{os.getpid()}/{uuid.uuid4().hex[:6]}"


class WriterLease:
    """Holds the writer lease (renewing it) or waits for it (retrying), in a daemon thread.

    `held` turns false when renewals have failed for most of the lease's life, before other
    instances may consider it stale, so two writers never overlap.
    """

    SAFETY = 0.8  # fraction of ttl after the last renewal during which we still consider ourselves the writer

    def __init__(
        self,
        share: FileShare,
        *,
        ttl: float = 60.0,
        holder: str | None = None,
        clock: Callable[[], float] = time.time,
        on_acquired: Callable[[], None] | None = None,
    ) -> None:
        self.share = share
        self.ttl = float(ttl)
        self.holder = holder or default_holder()
        self.generation = 0  # how many times this instance has acquired the lease
        self._clock = clock
        self._on_acquired = on_acquired
        self._lease: LeaseRecord | None = None
        self._other: LeaseRecord | None = None
        self._error: str | None = None
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def interval(self) -> float:
        return max(self.ttl / 3.0, 0.05)

    def start(self) -> WriterLease:
        """Try once now (so health is right from the start), then keep trying in the background."""
        self.attempt()
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="writer-lease", daemon=True)
            self._thread.start()
        return self

    def stop(self, release: bool = True) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=10)
        with self._lock:
            lease, self._lease = self._lease, None
        if release and lease is not None:
            try:
                self.share.release_lease(lease)
                log.info("writer lease released")
            except Exception as exc:  # noqa: BLE001 - the next instance will find it stale instead
                log.warning("releasing the writer lease failed: %s", exc)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.attempt()

    def attempt(self) -> bool:
        """Renew the lease if we hold it, else try to take it. Returns whether we hold it now."""
        acquired = False
        with self._lock:
            if self._stop.is_set() and self._thread is not None:
                return False
            if self._lease is not None:
                try:
                    self._lease = self.share.renew_lease(self._lease)
                    self._error = None
                except LeaseLostError as exc:
                    log.error("lost the writer lease: %s; writes are refused until it is back", exc)
                    self._lease = None
                    self._error = str(exc)
                except Exception as exc:  # noqa: BLE001 - OSError locally, azure-core errors on Azure: retried next round
                    log.warning("renewing the writer lease failed (will retry): %s", exc)
                    self._error = f"renewing the lease failed: {exc}"
            if self._lease is None:
                try:
                    self._lease = self.share.acquire_lease(self.holder, self.ttl)
                    self._other = None
                    self._error = None
                    self.generation += 1
                    acquired = True
                    log.info("writer lease acquired by %s on %s", self.holder, self.share.location)
                except LeaseHeldError as exc:
                    if self._other is None or self._other.holder != exc.lease.holder:
                        log.warning("writer lease held by %s; this instance refuses writes", exc.lease.holder)
                    self._other = exc.lease
                    self._error = None
                except Exception as exc:  # noqa: BLE001 - OSError locally, azure-core errors on Azure: retried next round
                    log.warning("taking the writer lease failed (will retry): %s", exc)
                    self._error = f"the share could not be reached: {exc}"
            held = self.held
        if acquired and self._on_acquired is not None:
            try:
                self._on_acquired()
            except Exception:  # the lease is ours whatever the callback does; the log says what went wrong
                log.exception("after taking the writer lease")
        return held

    @property
    def held(self) -> bool:
        lease = self._lease
        return lease is not None and self._clock() < lease.renewed_at + self.ttl * self.SAFETY

    def refusal(self) -> str:
        """Why writes are refused, for the person who will read the tool error."""
        retry = f"If the other instance has stopped, its lease expires within {self.ttl:g} s and this one takes over."
        if self._other is not None:
            age = max(self._clock() - self._other.renewed_at, 0.0)
            return (
                f"This memory server is read-only right now: another instance ({self._other.holder}, "
                f"last seen {age:.0f} s ago) holds the writer lease on the memory store, and two writers "
                f"would corrupt it. Searching still works; try saving again in a minute. {retry}"
            )
        reason = self._error or "the writer lease is not held"
        return (
            f"This memory server is read-only right now: {reason}. Writes are refused rather than risking the "
            f"memory store; try again in a minute. {retry}"
        )

    def check_writable(self) -> None:
        if not self.held:
            raise WriterLeaseError(self.refusal())

    def status(self) -> dict[str, Any]:
        lease = self._lease
        if self.held and lease is not None:
            return {"state": "writer", "holder": self.holder, "lease": lease.public()}
        report: dict[str, Any] = {"state": "standby", "holder": self.holder, "message": self.refusal()}
        if self._other is not None:
            report["writer"] = self._other.public()
        return report
