"""What went wrong with the disk, in words a person can act on, and which failures to retry.

Chroma and SQLite report a full disk, a read-only mount or a lock held by another process as
assorted exception types and messages; the engine turns them into one clear error each (reads
keep working; nothing already stored is touched) and retries only what passes by itself.
"""

from __future__ import annotations

import errno
from collections.abc import Sequence

from symbiote.errors import DriverError, StoreUnavailableError


class StorageFullError(StoreUnavailableError):
    pass


class StorageReadOnlyError(StoreUnavailableError):
    pass


class StoreDamagedError(StoreUnavailableError):
    """The data directory cannot be read as a memory store; it was copied aside, not changed."""


_FULL = ("database or disk is full", "no space left on device", "disk full", "quota exceeded")
_READ_ONLY = ("readonly database", "read-only file system", "read only file system", "attempt to write a readonly")
_TRANSIENT = ("database is locked", "database table is locked", "database is busy", "resource temporarily unavailable")
# A Chroma server that stopped answering mid-call (httpx's errors, by name and message): the write
# may have landed, so "nothing was changed" would not be true.
_CUT_OFF = (
    "server disconnected",
    "connection reset",
    "connection aborted",
    "connection refused",
    "broken pipe",
    "remoteprotocolerror",
    "readerror",
    "writeerror",
    "readtimeout",
    "writetimeout",
    "connecterror",
    "could not connect",
)
_CUT_OFF_ERRNOS = {errno.ECONNRESET, errno.ECONNABORTED, errno.ECONNREFUSED, errno.EPIPE, errno.ETIMEDOUT}
_DAMAGED = ("file is not a database", "database disk image is malformed", "malformed", "not a database", "corrupt")


def exception_chain(exc: BaseException) -> list[BaseException]:
    """`exc` and what caused it, outermost first (causes before implicit contexts, no loops)."""
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def _text(exc: BaseException) -> str:
    return " ".join(f"{type(e).__name__} {e}".lower() for e in exception_chain(exc))


class RemoteStoreError(DriverError):
    """An error raised in the memory store process (`symbiote.storage.chroma.process.child`) that could
    not be sent as itself; the text keeps its whole chain, `errno` the first errno in it."""

    def __init__(self, text: str, errno: int | None = None) -> None:
        super().__init__(text)
        self.errno = errno


def _errnos(exc: BaseException) -> set[int]:
    # OSError, and errors from the memory store process that carry the errno of their cause
    return {e.errno for e in exception_chain(exc) if isinstance(e, (OSError, RemoteStoreError)) and e.errno is not None}


def _is_full(exc: BaseException) -> bool:
    codes = _errnos(exc)
    return errno.ENOSPC in codes or errno.EDQUOT in codes or any(s in _text(exc) for s in _FULL)


def _is_read_only(exc: BaseException) -> bool:
    codes = _errnos(exc)
    return errno.EROFS in codes or errno.EACCES in codes or any(s in _text(exc) for s in _READ_ONLY)


def move_failure(exc: BaseException, doing: str, where: str, memory_ids: Sequence[str]) -> StoreUnavailableError:
    """The error for a move into or out of the trash that failed and left these memories `where`
    they were ("still stored, not in the trash"): `doing` is "Deleting" or "Restoring"."""
    shown = ", ".join(memory_ids[:5]) + (f" and {len(memory_ids) - 5} more" if len(memory_ids) > 5 else "")
    told = f"{shown} {'is' if len(memory_ids) == 1 else 'are'} {where}; try again"
    if _is_full(exc):
        return StorageFullError(
            f"Storage full: {doing.lower()} failed and {told} once there is disk space "
            "(free some, or raise the file share's quota)."
        )
    if _is_read_only(exc):
        return StorageReadOnlyError(
            f"Storage is read-only: {doing.lower()} failed and {told} once CHROMADB_PATH is writable."
        )
    return StoreUnavailableError(f"{doing} failed ({exc}), and {told}.")


def write_failure(exc: BaseException) -> StoreUnavailableError:
    """The error to show for a failed write."""
    text, codes = _text(exc), _errnos(exc)
    if _is_full(exc):
        return StorageFullError(
            "Storage full, unable to save memory. Free disk space (or raise the file share's quota) and try "
            "again; everything already stored is intact and search keeps working."
        )
    if _is_read_only(exc):
        return StorageReadOnlyError(
            "Storage is read-only, unable to save memory. Make CHROMADB_PATH writable (check the mount and its "
            "permissions); everything already stored is intact and search keeps working."
        )
    if codes & _CUT_OFF_ERRNOS or any(s in text for s in _CUT_OFF):
        return StoreUnavailableError(
            f"The memory store stopped answering during the write ({exc}), so whether it was saved is unknown: "
            "some or all of it may be stored. Look with search_memory or list_memories before writing again; "
            "storing the same text again is safe (it is reported as a duplicate, not stored twice)."
        )
    return StoreUnavailableError(
        f"Saving to the memory store failed ({exc}); nothing was changed. "
        "Check that the disk has space and CHROMADB_PATH is writable."
    )


def is_transient(exc: BaseException) -> bool:
    return any(s in _text(exc) for s in _TRANSIENT)


def is_damage(exc: BaseException) -> bool:
    return any(s in _text(exc) for s in _DAMAGED)
