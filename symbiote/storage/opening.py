"""Opening a memory store: embedded Chroma in a data directory, or a Chroma server; resetting one.

A damaged store is copied aside before anything else touches it, and every refusal says what
to fix (a read-only mount, a directory we may not write). The data directory is kept private
(0700, its files 0600: `make_private`). `symbiote reset` moves the directory aside and keeps the
sign-in database unless asked; a server still running on the old directory notices (`ResetGuard`)
and refuses to go on with it instead of serving, and writing to, the data set aside. The
directory records its format (`symbiote.storage.data_format`): one a newer release wrote is refused
before anything here touches it.
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING

from symbiote.errors import StoreUnavailableError
from symbiote.storage.base import CHROMA_FILE, LEXICAL_FILE, MemoryStore
from symbiote.storage.data_format import record_format
from symbiote.storage.disk_errors import StorageReadOnlyError, StoreDamagedError, is_damage
from symbiote.storage.history import HistoryStore
from symbiote.storage.layers import HistoryLayer, Layer, S, StoreLayer

if TYPE_CHECKING:
    from symbiote.storage.chroma_client import ChromaServer
    from symbiote.storage.chroma_store import ChromaMemoryStore
    from symbiote.storage.keywords import LexicalIndex


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
    raise _not_writable(path, problem)


def _not_writable(path: Path, problem: str) -> StoreUnavailableError:
    return StoreUnavailableError(
        f"The memory store directory {str(path)!r} is not writable ({problem}). "
        "Fix its permissions or set CHROMADB_PATH to a writable directory."
    )


def open_embedded_store(
    path: Path, model_name: str, dimension: int, vectors_in_memory: bool = False
) -> ChromaMemoryStore:
    """Open (creating if needed) the embedded Chroma store and its keyword index at `path`.
    `vectors_in_memory`: only where nothing else writes to it (`ChromaMemoryStore`)."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        record_format(path)  # refuses a newer release's directory before anything else touches it
        make_private(path)
        probe = path / ".symbiote-write-test"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        if exc.errno == errno.EROFS:
            raise StorageReadOnlyError(
                f"Storage is read-only: {str(path)!r} is on a read-only file system, so memory is unavailable "
                "(Chroma cannot open a store read-only). Remount it read-write or set CHROMADB_PATH elsewhere; "
                "the stored memories are untouched."
            ) from exc
        raise _not_writable(path, str(exc.strerror or exc)) from exc
    from symbiote.storage.chroma_client import embedded_client
    from symbiote.storage.chroma_store import ChromaMemoryStore

    client = None
    try:
        client = embedded_client(path)
        for collection in client.list_collections():  # reads the catalogue: damage shows here, not mid-request
            client.get_collection(collection.name).count()
    except Exception as exc:
        _forget_chroma_system(path, client)
        if not is_damage(exc):
            raise
        backup = quarantine(path)
        raise StoreDamagedError(
            f"The memory store in {str(path)!r} is damaged ({exc}). Its files were copied to {str(backup)!r} "
            "untouched. To recover: restore a snapshot or backup into CHROMADB_PATH, or run "
            "`symbiote reset --confirm` to start an empty store (the damaged one stays in the backup). "
            "Memory is unavailable until then."
        ) from exc
    return ChromaMemoryStore(
        client, model_name, dimension, _keyword_index(path), data_path=path, vectors_in_memory=vectors_in_memory
    )


def _forget_chroma_system(path: Path, client: object | None) -> None:
    """Chroma caches one system per path and keeps a broken one after a failed open (1.5.9), so
    every later open of that path (after a restore or reset) would fail too: drop it."""
    from chromadb.api.shared_system_client import SharedSystemClient

    if client is not None:
        try:
            client.close()  # type: ignore[attr-defined]
        except Exception:  # a broken client's own close may fail any way; it is being dropped
            logging.getLogger(__name__).debug("closing a Chroma client that failed to open", exc_info=True)
    SharedSystemClient._identifier_to_system.pop(str(path), None)
    SharedSystemClient._identifier_to_refcount.pop(str(path), None)


def _keyword_index(path: Path) -> LexicalIndex:
    """The keyword index; derived data, so a damaged one is set aside and rebuilt from Chroma."""
    from symbiote.storage.keywords import LexicalIndex

    try:
        index = LexicalIndex(path / LEXICAL_FILE)
        index.count()
        return index
    except Exception as exc:
        if not is_damage(exc):
            raise
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        for suffix in ("", "-wal", "-shm"):
            damaged = path / f"{LEXICAL_FILE}{suffix}"
            if damaged.exists():
                damaged.rename(path / f"{LEXICAL_FILE}{suffix}.damaged-{stamp}")
        logging.getLogger(__name__).warning("keyword index was damaged (%s); set aside, rebuilding from Chroma", exc)
        return LexicalIndex(path / LEXICAL_FILE)


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


class _ResetLayer(Layer[S]):
    """A store opened in a data directory that refuses every call (but closing) once that directory
    is not the one it opened."""

    def __init__(self, store: S, path: Path) -> None:
        self._store: S = store
        self._reset = ResetCheck(path)

    def _target(self) -> S:
        self._reset.check()
        return self._store

    def close(self) -> None:
        self._store.close()


class ResetGuard(_ResetLayer[MemoryStore], StoreLayer):
    """The memory store's reset check."""


class ResetHistoryGuard(_ResetLayer[HistoryStore], HistoryLayer):
    """The conversation history's reset check."""


def open_server_store(server: ChromaServer, index_dir: Path, model_name: str, dimension: int) -> ChromaMemoryStore:
    """Open the store on a Chroma server (CHROMA_HOST); the keyword index stays local, in `index_dir`.

    Same store class, collections and behaviour as the embedded store; only the client differs.
    `symbiote.storage.chroma_client.ServerMemoryStore` keeps the local keyword index in step with the server.
    """
    from symbiote.storage.chroma_client import ServerMemoryStore, connect_server
    from symbiote.storage.keywords import LexicalIndex

    try:
        index_dir.mkdir(parents=True, exist_ok=True)
        record_format(index_dir)
    except OSError as exc:
        raise StoreUnavailableError(
            f"The directory {str(index_dir)!r} for the local keyword index cannot be created "
            f"({exc.strerror or exc}). Set CHROMADB_PATH to a writable directory."
        ) from exc
    client = connect_server(server)
    return ServerMemoryStore(client, model_name, dimension, LexicalIndex(index_dir / LEXICAL_FILE), data_path=None)
