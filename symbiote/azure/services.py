"""Everything the file share adds to one running instance, opened and closed together.

`symbiote.runtime.build_runtime` opens these when SYMBIOTE_SHARE is set: the share, the writer
lease taken at start and kept in the background, the write gate, and the snapshot job.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from symbiote.azure.azure_files import open_share
from symbiote.azure.guard import WriteGate
from symbiote.azure.lease import WriterLease
from symbiote.azure.share import FileShare, ShareUsage
from symbiote.azure.snapshots import CATCH_UP_AGE, SnapshotJob
from symbiote.config import Settings

log = logging.getLogger(__name__)

USAGE_CACHE_S = 60.0


@dataclass
class ShareServices:
    """Everything the share adds to one running instance."""

    share: FileShare
    lease: WriterLease
    gate: WriteGate
    snapshots: SnapshotJob
    _usage: tuple[float, dict[str, Any]] | None = field(default=None, repr=False)
    _periodic_stop: threading.Event = field(default_factory=threading.Event, repr=False)

    def usage_report(self) -> dict[str, Any]:
        """Share usage against quota (cached for a minute: on Azure it is a network call)."""
        now = time.monotonic()
        if self._usage is not None and now - self._usage[0] < USAGE_CACHE_S:
            return self._usage[1]
        try:
            usage: ShareUsage = self.share.usage()
            report = {"kind": self.share.kind, **usage.report()}
            if usage.warning:
                log.warning("%s", usage.warning)
        except Exception as exc:  # noqa: BLE001 - health and memory_stats report the failure instead of failing
            log.warning("share usage unavailable: %s", exc)
            report = {"kind": self.share.kind, "error": f"usage unavailable: {exc}"}
        self._usage = (now, report)
        return report

    def start_periodic_snapshots(self, interval_s: float = 3600.0, max_age: timedelta = CATCH_UP_AGE) -> None:
        """Without the Functions timer (`symbiote serve`): check every `interval_s`, snapshot when due."""

        def loop() -> None:
            while not self._periodic_stop.wait(interval_s):
                try:
                    self.snapshots.catch_up(max_age)
                except Exception:  # the next round tries again; a dead thread would never snapshot
                    log.exception("periodic snapshot failed")

        threading.Thread(target=loop, name="periodic-snapshots", daemon=True).start()

    def close(self) -> None:
        self._periodic_stop.set()
        self.lease.stop(release=True)


def open_share_services(
    settings: Settings, share: FileShare | None = None, *, catch_up: bool = True
) -> ShareServices | None:
    """Open the share, take (or wait for) the writer lease; None when no share is configured."""
    share = share if share is not None else open_share(settings)
    if share is None:
        return None
    gate = WriteGate()
    job: SnapshotJob  # made below, once the lease it needs is; the lease calls back only after that
    # An instance scaled to zero when the timer was due takes the missed snapshot once it is the writer.
    on_acquired = (lambda: _in_background(job.catch_up, "catch-up snapshot")) if catch_up else None
    lease = WriterLease(share, ttl=settings.lease_ttl_seconds, on_acquired=on_acquired)
    job = SnapshotJob(share, lease, gate, settings.snapshot_keep)
    services = ShareServices(share, lease, gate, job)
    lease.start()
    return services


def _in_background(fn: Callable[[], Any], what: str) -> None:
    def run() -> None:
        try:
            fn()
        except Exception:  # nobody waits on this thread: the log is the only place to say so
            log.exception("%s failed", what)

    threading.Thread(target=run, name=what.replace(" ", "-"), daemon=True).start()
