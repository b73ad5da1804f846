"""The data directory around a store: kept private, a damaged one copied aside, reset, and the reset check.

Opening a store in it is `symbiote.storage.chroma.opening`. A damaged store is copied aside before
anything else touches it, and every refusal says what to fix (a read-only mount, a directory we may
not write). The data directory is kept private
(0700, its files 0600: `make_private`). `symbiote reset` moves the directory aside and keeps the
sign-in database unless asked; a server still running on the old directory notices (`ResetGuard`)
and refuses to go on with it instead of serving, and writing to, the data set aside. The
directory records its format (`symbiote.storage.data_format`): one a newer release wrote is refused
before anything here touches it.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Concatenate

from symbiote.errors import StoreUnavailableError
from symbiote.storage.base import CHROMA_FILE, P, Reach, S, T


def embedded_store_exists(path: Path) -> bool:
    """Whether the embedded store at `path` has been created yet; asking creates nothing.

    Where it has not, and could not be (a file in the way, a directory we may not write, a
    read-only file system), this says so now: StoreUnavailableError with what to fix.
    """
    if (path / CHROMA_FILE).is_file():
        return True
    nearest = path
    while not nearest.exists() and nearest.parent != nearest:  # the directory it would be made in
        nearest = nearest.parent
    if not nearest.is_dir():
        problem = f"{str(nearest)!r} is a file, not a directory"
    elif not os.access(nearest, os.W_OK | os.X_OK):
        problem = f"{str(nearest)!r} does not let this server write"
    else:
        return False
    raise not_writable(path, problem)


def not_writable(path: Path, problem: str) -> StoreUnavailableError:
    return StoreUnavailableError(
        f"The memory store directory {str(path)!r} is not writable ({problem}). "
        "Fix its permissions or set CHROMADB_PATH to a writable directory."
    )


def quarantine(path: Path) -> Path:
    """Copy a damaged data directory aside (timestamped), leaving the original untouched."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    backup = path.with_name(f"{path.name}.damaged-{stamp}")
    shutil.copytree(path, backup, dirs_exist_ok=True)
    logging.getLogger(__name__).error(
        "memory store at %s is damaged; copied to %s. Recover by restoring a backup into %s, or "
        "`symbiote reset --confirm` for an empty store.",
        path,
        backup,
        path,
    )
    return backup


def make_private(path: Path) -> None:
    """Owner-only modes on the data directory and everything in it (0700 / 0600), including what an
    older version created 0755 / 0644. A file system without modes (an SMB share) is left as it is."""
    try:
        for directory, _subdirectories, files in os.walk(path):
            os.chmod(directory, 0o700)
            for name in files:
                file = os.path.join(directory, name)
                if not os.path.islink(file):
                    os.chmod(file, 0o600)
    except OSError as exc:
        logging.getLogger(__name__).info(
            "could not make %s private (%s); its file system may not keep modes", path, exc
        )


def reset_store(path: Path, keep: tuple[str, ...] = ()) -> Path | None:
    """`symbiote reset --confirm`: move the data directory aside (never deleted) and leave an empty one.

    The files named in `keep` (the sign-in database and its journal) move into the new directory,
    so API keys and connected apps survive a reset of the memories.
    """
    if not path.exists():
        path.mkdir(parents=True, mode=0o700)
        return None
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    backup = path.with_name(f"{path.name}.reset-{stamp}")
    path.rename(backup)
    path.mkdir(parents=True, mode=0o700)
    for name in keep:
        for suffix in ("", "-journal", "-wal", "-shm"):
            kept = backup / f"{name}{suffix}"
            if kept.exists():
                kept.rename(path / kept.name)
    return backup


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino


class StoreResetError(StoreUnavailableError):
    """The data directory this server opened was moved aside (`symbiote reset`) while it ran."""


class ResetCheck:
    """Whether the data directory is still the one opened: reset moves it aside, and the server
    must not serve, or write to, the data set aside."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._opened = _identity(path)

    def check(self) -> None:
        if self._opened is not None and _identity(self._path) != self._opened:
            raise StoreResetError(
                f"The memory store in {str(self._path)!r} was reset (moved aside) while this server was running. "
                "Restart the server to use the new store; nothing was written to the old one."
            )


class ResetGuard(Reach[S]):
    """A store opened in a data directory: every call (but closing) refused once that directory is
    not the one it opened."""

    def __init__(self, inner: Reach[S], path: Path) -> None:
        self._inner: Reach[S] = inner
        self._reset = ResetCheck(path)

    def call(self, op: Callable[Concatenate[S, P], T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        self._reset.check()
        return self._inner.call(op, *args, **kwargs)

    def close(self) -> None:
        self._inner.close()
