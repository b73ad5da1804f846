"""The file share that holds the memory store: what Symbiote needs from it, and its records.

Chroma keeps its data in SQLite and HNSW files that only one process may write. On Azure the
data sits on an Azure Files share mounted into the container, and nothing in SMB (mounted with
`nobrl`, as SQLite there requires) stops a second instance from opening it too. So:

- **Writer lease.** The instance that writes holds a lease on a lock file in the share
  (`.symbiote/writer.lock`) and renews it; one that cannot get it refuses writes and says so.
  A holder that crashed stops renewing, so after `ttl` seconds its lease counts as stale and
  the next instance breaks it and takes over (`symbiote.azure.lease.WriterLease`).
- **Snapshots.** A point-in-time copy of the whole share, taken while writes are quiesced,
  pruned to a configured count.
- **Usage.** Bytes used against the share's quota, with a warning from 90 %.

One small interface, `FileShare`, with two implementations: `symbiote.azure.local_share`
(a directory: local runs, docker-compose, tests) and `symbiote.azure.azure_files` (the Azure
Files SDK).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from symbiote.errors import SymbioteError

WARN_PERCENT = 90.0
STATE_DIR = ".symbiote"
LOCK_NAME = "writer.lock"
SNAPSHOT_DIR = ".snapshots"


class FileShareError(SymbioteError):
    """The share could not do what was asked; the message says why."""


class LeaseHeldError(FileShareError):
    """Another instance holds a live writer lease."""

    def __init__(self, lease: LeaseRecord) -> None:
        super().__init__(f"the writer lease is held by {lease.holder}")
        self.lease = lease


class LeaseLostError(FileShareError):
    """Our lease is gone: released, broken by another instance, or replaced."""


def iso_utc_seconds(epoch: float) -> str:
    """A lease time as people and the health report read it: UTC, whole seconds, with a Z."""
    return datetime.fromtimestamp(epoch, tz=UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class LeaseRecord:
    """Who holds the writer lease and when they last proved they are alive."""

    holder: str
    lease_id: str
    acquired_at: float
    renewed_at: float
    ttl: float

    def stale(self, now: float) -> bool:
        return now > self.renewed_at + self.ttl

    def to_metadata(self) -> dict[str, str]:
        return {
            "holder": self.holder,
            "leaseid": self.lease_id,
            "acquiredat": f"{self.acquired_at:.3f}",
            "renewedat": f"{self.renewed_at:.3f}",
            "ttl": f"{self.ttl:g}",
        }

    @classmethod
    def from_metadata(cls, meta: dict[str, Any]) -> LeaseRecord | None:
        meta = {str(k).lower(): v for k, v in (meta or {}).items()}
        try:
            return cls(
                holder=str(meta["holder"]),
                lease_id=str(meta.get("leaseid", "")),
                acquired_at=float(meta["acquiredat"]),
                renewed_at=float(meta["renewedat"]),
                ttl=float(meta["ttl"]),
            )
        except (KeyError, TypeError, ValueError):
            return None

    def public(self) -> dict[str, Any]:
        return {
            "holder": self.holder,
            "acquired_at": iso_utc_seconds(self.acquired_at),
            "renewed_at": iso_utc_seconds(self.renewed_at),
            "expires_at": iso_utc_seconds(self.renewed_at + self.ttl),
        }


@dataclass(frozen=True)
class Snapshot:
    snapshot_id: str  # Azure: the snapshot's timestamp; local: its directory name. Sorts by time.
    created_at: datetime


@dataclass(frozen=True)
class ShareUsage:
    used_bytes: int
    quota_bytes: int | None

    @property
    def percent(self) -> float | None:
        if not self.quota_bytes:
            return None
        return round(100.0 * self.used_bytes / self.quota_bytes, 1)

    @property
    def warning(self) -> str | None:
        percent, quota = self.percent, self.quota_bytes
        if percent is None or quota is None or percent < WARN_PERCENT:
            return None
        return (
            f"The file share is {percent:g}% full ({self.used_bytes / 1_048_576:.1f} MiB of "
            f"{quota / 1_048_576:.0f} MiB). Raise its quota or delete memories before writes start to fail."
        )

    def report(self) -> dict[str, Any]:
        return {
            "used_mb": round(self.used_bytes / 1_048_576, 3),
            "quota_mb": round(self.quota_bytes / 1_048_576, 1) if self.quota_bytes else None,
            "percent_used": self.percent,
            "warning": self.warning,
        }


class FileShare(Protocol):
    """What Symbiote needs from the storage under CHROMADB_PATH."""

    kind: str
    location: str

    def acquire_lease(self, holder: str, ttl: float) -> LeaseRecord: ...

    def renew_lease(self, lease: LeaseRecord) -> LeaseRecord: ...

    def release_lease(self, lease: LeaseRecord) -> None: ...

    def current_lease(self) -> LeaseRecord | None: ...

    def create_snapshot(self) -> Snapshot: ...

    def list_snapshots(self) -> list[Snapshot]: ...

    def delete_snapshot(self, snapshot: Snapshot) -> None: ...

    def usage(self) -> ShareUsage: ...


def prune_snapshots(share: FileShare, keep: int) -> list[Snapshot]:
    """Delete the oldest snapshots beyond the newest `keep`; returns what was deleted."""
    snapshots = sorted(share.list_snapshots(), key=lambda s: (s.created_at, s.snapshot_id))
    doomed = snapshots[: max(len(snapshots) - max(keep, 1), 0)]
    for snapshot in doomed:
        share.delete_snapshot(snapshot)
    return doomed
