"""Snapshots of the file share: taken with writes quiesced, then pruned to the newest few.

The timer function (`function_app.py`) runs `SnapshotJob.run` on its schedule; an instance
that was scaled to zero when the timer was due catches up when it takes the writer lease, and
`symbiote serve` (no timer) checks periodically (`symbiote.azure.services`).
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from symbiote.azure.guard import QUIESCE_TIMEOUT_S, WriteGate
from symbiote.azure.lease import WriterLease
from symbiote.azure.share import FileShare, Snapshot, prune_snapshots

log = logging.getLogger(__name__)

CATCH_UP_AGE = timedelta(hours=25)  # a daily snapshot missed while scaled to zero is taken at start


class SnapshotJob:
    """Snapshot the share with writes quiesced, then prune to the newest `keep`."""

    def __init__(self, share: FileShare, lease: WriterLease | None, gate: WriteGate, keep: int) -> None:
        self.share = share
        self.lease = lease
        self.gate = gate
        self.keep = keep
        self._running = threading.Lock()

    def run(self, reason: str = "scheduled") -> dict[str, Any]:
        if self.lease is not None and not self.lease.held:
            message = "skipped: this instance is not the writer (the writer's own timer takes the snapshot)"
            log.info("snapshot %s", message)
            return {"status": "skipped", "reason": message}
        if not self._running.acquire(timeout=QUIESCE_TIMEOUT_S):
            return {"status": "skipped", "reason": "another snapshot is still being taken"}
        try:
            started = time.perf_counter()
            with self.gate.quiesce():
                snapshot = self.share.create_snapshot()
            quiesced_ms = round((time.perf_counter() - started) * 1000, 1)
            pruned = prune_snapshots(self.share, self.keep)
            log.info(
                "%s snapshot %s taken (writes paused %.0f ms); pruned %d older",
                reason,
                snapshot.snapshot_id,
                quiesced_ms,
                len(pruned),
            )
            return {
                "status": "ok",
                "reason": reason,
                "snapshot": snapshot.snapshot_id,
                "writes_paused_ms": quiesced_ms,
                "pruned": [s.snapshot_id for s in pruned],
                "keep": self.keep,
            }
        finally:
            self._running.release()

    def newest(self) -> Snapshot | None:
        snapshots = self.share.list_snapshots()
        return max(snapshots, key=lambda s: s.created_at) if snapshots else None

    def catch_up(self, max_age: timedelta = CATCH_UP_AGE) -> dict[str, Any] | None:
        """Take a snapshot now if the newest is older than `max_age` (or there is none)."""
        newest = self.newest()
        if newest is not None and datetime.now(UTC) - newest.created_at < max_age:
            return None
        return self.run(reason="catch-up")
