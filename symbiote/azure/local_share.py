"""A local directory standing in for the file share: local runs, docker-compose and tests.

The lease is a JSON file created atomically; a snapshot is a copy under `.snapshots/`; the
quota is the space the disk has left unless one is given.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
import uuid
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from symbiote.azure.share import (
    LOCK_NAME,
    SNAPSHOT_DIR,
    STATE_DIR,
    FileShareError,
    LeaseHeldError,
    LeaseLostError,
    LeaseRecord,
    ShareUsage,
    Snapshot,
    iso_utc_seconds,
)

log = logging.getLogger(__name__)


class LocalDirectoryShare:
    """A directory standing in for the share: lease file, copy snapshots, disk usage."""

    kind = "local"

    def __init__(self, root: Path, *, quota_bytes: int | None = None, clock: Callable[[], float] = time.time) -> None:
        self.root = Path(root)
        self.location = str(self.root)
        self.quota_bytes = quota_bytes
        self._clock = clock
        self._state = self.root / STATE_DIR
        self._lock = self._state / LOCK_NAME
        self._snapshots = self.root / SNAPSHOT_DIR

    # lease

    def acquire_lease(self, holder: str, ttl: float) -> LeaseRecord:
        self._state.mkdir(parents=True, exist_ok=True)
        now = self._clock()
        record = LeaseRecord(holder, uuid.uuid4().hex, now, now, ttl)
        current: LeaseRecord | None = None
        for _ in range(3):
            if self._create_exclusive(record):
                return record
            current = self._read(self._lock)
            if current is None:
                continue  # released between our two steps; try again
            if not current.stale(now):
                raise LeaseHeldError(current)
            log.warning(
                "writer lease of %s is stale (last renewed %s); taking over",
                current.holder,
                iso_utc_seconds(current.renewed_at),
            )
            self._take_over(current)
        raise LeaseHeldError(current or record)

    def renew_lease(self, lease: LeaseRecord) -> LeaseRecord:
        current = self._read(self._lock)
        if current is None or current.lease_id != lease.lease_id:
            raise LeaseLostError(
                f"the writer lease was taken by {current.holder}" if current else "the writer lease file is gone"
            )
        renewed = replace(lease, renewed_at=self._clock())
        self._write_replace(renewed)
        return renewed

    def release_lease(self, lease: LeaseRecord) -> None:
        current = self._read(self._lock)
        if current is not None and current.lease_id == lease.lease_id:
            self._lock.unlink(missing_ok=True)

    def current_lease(self) -> LeaseRecord | None:
        return self._read(self._lock)

    def _create_exclusive(self, record: LeaseRecord) -> bool:
        """Create the lock file with its content in one step (hard link); False if it exists."""
        tmp = self._state / f".{LOCK_NAME}.{record.lease_id}.tmp"
        tmp.write_text(json.dumps(record.to_metadata()))
        try:
            os.link(tmp, self._lock)
            return True
        except FileExistsError:
            return False
        except OSError:  # no hard links on this filesystem: exclusive create, then write
            try:
                fd = os.open(self._lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                return False
            with os.fdopen(fd, "w") as handle:
                handle.write(json.dumps(record.to_metadata()))
            return True
        finally:
            tmp.unlink(missing_ok=True)

    def _write_replace(self, record: LeaseRecord) -> None:
        tmp = self._state / f".{LOCK_NAME}.{record.lease_id}.tmp"
        tmp.write_text(json.dumps(record.to_metadata()))
        os.replace(tmp, self._lock)

    def _read(self, path: Path) -> LeaseRecord | None:
        try:
            raw = path.read_text()
            stamp = path.stat().st_mtime
        except FileNotFoundError:
            return None
        try:
            found = LeaseRecord.from_metadata(json.loads(raw))
        except ValueError:
            found = None
        # Unreadable (half-written by a crash): treat it as a lease renewed when the file was written.
        return found or LeaseRecord("unknown", "", stamp, stamp, 60.0)

    def _take_over(self, stale: LeaseRecord) -> None:
        """Move the stale lock aside, unless its holder renewed it in the meantime."""
        aside = self._state / f"{LOCK_NAME}.{uuid.uuid4().hex}.stale"
        try:
            os.rename(self._lock, aside)
        except FileNotFoundError:
            return  # someone else moved it first
        moved = self._read(aside)
        if moved is not None and (moved.lease_id, moved.renewed_at) != (stale.lease_id, stale.renewed_at):
            try:  # it was renewed or replaced between our read and the move: put it back
                os.link(aside, self._lock)
            except OSError:
                pass
        aside.unlink(missing_ok=True)

    # snapshots

    def create_snapshot(self) -> Snapshot:
        self._snapshots.mkdir(parents=True, exist_ok=True)
        created = datetime.now(UTC)
        name = created.strftime("%Y-%m-%dT%H-%M-%S.%fZ")
        while (self._snapshots / name).exists():
            name += "x"
        staging = self._snapshots / f".{name}.partial"
        root = self.root.resolve()

        def skip(directory: str, names: list[str]) -> list[str]:
            return [n for n in names if n in (STATE_DIR, SNAPSHOT_DIR)] if Path(directory).resolve() == root else []

        try:
            shutil.copytree(self.root, staging, symlinks=True, ignore=skip)
            os.rename(staging, self._snapshots / name)
        finally:
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)
        return Snapshot(name, created)

    def list_snapshots(self) -> list[Snapshot]:
        if not self._snapshots.is_dir():
            return []
        found = []
        for entry in self._snapshots.iterdir():
            if entry.is_dir() and not entry.name.startswith("."):
                try:
                    created = datetime.strptime(entry.name.rstrip("x"), "%Y-%m-%dT%H-%M-%S.%fZ")
                except ValueError:
                    continue
                found.append(Snapshot(entry.name, created.replace(tzinfo=UTC)))
        return sorted(found, key=lambda s: (s.created_at, s.snapshot_id))

    def delete_snapshot(self, snapshot: Snapshot) -> None:
        target = self._snapshots / snapshot.snapshot_id
        if target.parent != self._snapshots or snapshot.snapshot_id.startswith("."):
            raise FileShareError(f"not a snapshot: {snapshot.snapshot_id!r}")
        shutil.rmtree(target, ignore_errors=False)

    def snapshot_path(self, snapshot: Snapshot) -> Path:
        return self._snapshots / snapshot.snapshot_id

    # usage

    def usage(self) -> ShareUsage:
        used = 0
        snapshots = self._snapshots.resolve()
        for directory, dirs, files in os.walk(self.root):
            if Path(directory).resolve() == snapshots.parent:
                dirs[:] = [d for d in dirs if d != SNAPSHOT_DIR]
            for name in files:
                try:
                    used += os.lstat(os.path.join(directory, name)).st_size
                except OSError:
                    pass
        quota = self.quota_bytes
        if quota is None and self.root.exists():
            quota = used + shutil.disk_usage(self.root).free
        return ShareUsage(used, quota)
