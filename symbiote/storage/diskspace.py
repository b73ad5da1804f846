"""Refuse writes while the data disk is (nearly) full, before Chroma ever sees the full disk.

Chroma 1.5.9 does not survive "no space left on device" cleanly: a later write can hang for good
in its Rust core or keep failing with "Error in compaction: Error purging logs" even after space
was freed. Checking the free space first (one statvfs call) keeps the store healthy: the write is
refused with a clear message, reads go on, and writing works again as soon as space is freed.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

from symbiote.storage.disk_errors import StorageFullError

FULL_MESSAGE = (
    "Storage full, unable to save memory: {free} free on the data disk, Symbiote keeps {reserve} in reserve. "
    "Free disk space (or raise the file share's quota) and try again; everything already stored is intact "
    "and search keeps working."
)
BYTES_PER_TEXT_BYTE = 4  # a memory's text lands in Chroma's log and segment and in the keyword index
BYTES_PER_VECTOR = 8 * 1024  # one 384-d vector with its metadata, log entry and HNSW links


def _mb(size: int) -> str:
    return f"{max(size, 0) / 1024 / 1024:.1f} MB"


class DiskSpace:
    """The data directory's free space against a reserve (SYMBIOTE_MIN_FREE_MB)."""

    def __init__(self, path: Path, reserve_bytes: int) -> None:
        self.path = path
        self.reserve_bytes = reserve_bytes

    def free_bytes(self) -> int:
        target = self.path
        while not target.exists() and target != target.parent:  # not created yet: its disk is the parent's
            target = target.parent
        return shutil.disk_usage(target).free

    @staticmethod
    def estimate(texts: list[str], vectors: int) -> int:
        """Roughly how many bytes a write of these texts and this many vectors takes on disk."""
        return sum(len(t.encode()) for t in texts) * BYTES_PER_TEXT_BYTE + vectors * BYTES_PER_VECTOR

    def check(self, incoming_bytes: int) -> None:
        if self.reserve_bytes <= 0:
            return
        try:
            free = self.free_bytes()
        except OSError:
            return  # cannot tell (odd mount): let the write itself report what is wrong
        if free - incoming_bytes < self.reserve_bytes:
            raise StorageFullError(FULL_MESSAGE.format(free=_mb(free), reserve=_mb(self.reserve_bytes)))

    async def ensure(self, incoming_bytes: int) -> None:
        """`check` off the event loop (statvfs on a network share is a round trip)."""
        if self.reserve_bytes > 0:
            await asyncio.to_thread(self.check, incoming_bytes)


def directory_bytes(path: Path) -> int:
    """What the files under `path` take (a file gone while it is walked counts nothing)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(root, name))
            except OSError:  # removed since the walk listed it: it no longer takes space
                pass
    return total
