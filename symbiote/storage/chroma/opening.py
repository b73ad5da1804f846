"""Opening a Chroma store: embedded in a data directory, or on a Chroma server, with its keyword index.

What is not Chroma's in opening (the directory's privacy, a damaged directory copied aside, the
reset check) is `symbiote.storage.data_directory`; this is the part that makes a Chroma client. The
store's classes are imported when a store is opened, not with this module: the store process
imports this package on its way to listening, and they bring numpy.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from symbiote.errors import StoreUnavailableError
from symbiote.storage.base import CHROMA_FILE, SIDE_DATABASE_FILE
from symbiote.storage.data_directory import make_private, not_writable, quarantine
from symbiote.storage.data_format import record_format
from symbiote.storage.disk_errors import StorageReadOnlyError, StoreDamagedError, is_damage

if TYPE_CHECKING:
    from symbiote.storage.chroma.client import ChromaServer
    from symbiote.storage.chroma.embedded import EmbeddedChroma
    from symbiote.storage.chroma.side_database import SideDatabase
    from symbiote.storage.chroma.store import ChromaMemoryStore


AHEAD_PREFIX = "symbiote-new-store-"  # then the making process's id: `_sweep_ahead` knows whose it is


def make_ahead(model_name: str, dimension: int) -> Path:
    """A new, empty store made in a directory of its own under the system's temporary directory, while
    the server imports the rest: creating Chroma's catalogue in place takes far longer than copying
    one. The engine's warm-up copies it in (`open_embedded_store`'s `ahead`); the caller removes it
    (`discard_ahead`)."""
    import tempfile

    _sweep_ahead(Path(tempfile.gettempdir()))
    path = Path(tempfile.mkdtemp(prefix=f"{AHEAD_PREFIX}{os.getpid()}-")) / "data"
    open_embedded_store(path, model_name, dimension).close()
    _forget_chroma_system(path, None)
    return path


def _sweep_ahead(temporary: Path) -> None:
    """Remove the stores made ahead by processes that are gone: a server killed before its first
    memory operation and its close leaves its own (some 200 KB) behind."""
    for left in temporary.glob(f"{AHEAD_PREFIX}*"):
        pid = left.name.removeprefix(AHEAD_PREFIX).split("-", 1)[0]
        if pid.isascii() and pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(left, ignore_errors=True)  # another process's sweep may be at it too


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def discard_ahead(ahead: Path) -> None:
    shutil.rmtree(ahead.parent, ignore_errors=True)  # a temporary directory: what is left, the system clears


def _copy_ahead(ahead: Path, path: Path) -> None:
    """Copy the store made ahead into `path`, Chroma's file last and under another name until whole:
    that file is what says a store exists, so a copy cut short is made again at the next open."""
    path.mkdir(parents=True, exist_ok=True)
    for item in ahead.iterdir():  # not SQLite's shared-memory index: the first connection makes its own
        if item.name != CHROMA_FILE and not item.name.endswith("-shm"):
            shutil.copy2(item, path / item.name)
    partial = path / f"{CHROMA_FILE}.partial"
    shutil.copy2(ahead / CHROMA_FILE, partial)
    os.replace(partial, path / CHROMA_FILE)


def open_embedded_store(
    path: Path,
    model_name: str,
    dimension: int,
    vectors_in_memory: bool = False,
    ahead: Path | None = None,
    write_behind: bool = False,
) -> ChromaMemoryStore:
    """Open (creating if needed) the embedded Chroma store and its keyword index at `path`.
    `vectors_in_memory` and `write_behind`: only where nothing else writes to it, and for
    `write_behind` where every call is followed by `settle` (`ChromaMemoryStore`). `ahead`: a
    new store made ahead (`make_ahead`), copied in if there is none at `path` yet."""
    from symbiote.storage.chroma.embedded import EmbeddedChroma

    if ahead is not None and not (path / CHROMA_FILE).is_file() and not EmbeddedChroma.holds(ahead):
        try:
            _copy_ahead(ahead, path)
        except OSError as exc:  # the directory is created below, or refused with what to fix
            logging.getLogger(__name__).info("the store made ahead could not be copied into %s (%s)", path, exc)
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
        raise not_writable(path, str(exc.strerror or exc)) from exc
    from symbiote.storage.chroma.segment_files import failed_on_index, set_aside_damaged
    from symbiote.storage.chroma.store import ChromaMemoryStore

    set_aside_damaged(path)  # Chroma's vector indexes a full disk cut short, before Chroma reads them
    client = None
    try:
        client = _opened_client(path)
    except Exception as exc:
        _forget_chroma_system(path, client)
        if failed_on_index(exc) and set_aside_damaged(path, everything_because=str(exc)):
            return open_embedded_store(path, model_name, dimension, vectors_in_memory, None, write_behind)
        if not is_damage(exc):
            raise
        backup = quarantine(path)
        raise StoreDamagedError(
            f"The memory store in {str(path)!r} is damaged ({exc}). Its files were copied to {str(backup)!r} "
            "untouched. To recover: restore a snapshot or backup into CHROMADB_PATH, or run "
            "`symbiote reset --confirm` to start an empty store (the damaged one stays in the backup). "
            "Memory is unavailable until then."
        ) from exc
    # A store that fails past this point (another model's data, a side database that cannot be read)
    # closes what it opened: Chroma's core for the path stayed in this process, with its files open.
    with contextlib.ExitStack() as opened:
        opened.callback(client.close)
        index = _keyword_index(path)
        opened.callback(index.close)
        store = ChromaMemoryStore(
            client,
            model_name,
            dimension,
            index,
            data_path=path,
            vectors_in_memory=vectors_in_memory,
            write_behind=write_behind,
        )
        opened.pop_all()
        return store


def _opened_client(path: Path) -> EmbeddedChroma:
    from symbiote.storage.chroma.client import embedded_client

    client = embedded_client(path)
    try:
        for collection in client.list_collections():  # reads the catalogue: damage shows here, not mid-request
            client.get_collection(collection.name).count()
    except Exception:
        _forget_chroma_system(path, client)
        raise
    return client


def _forget_chroma_system(path: Path, client: EmbeddedChroma | None) -> None:
    """Close a client that failed to open and drop the core kept for `path`: a broken one would fail
    every later open of that path (after a restore or reset) too."""
    from symbiote.storage.chroma.embedded import EmbeddedChroma

    if client is not None:
        try:
            client.close()
        except Exception:
            logging.getLogger(__name__).debug("closing a Chroma client that failed to open", exc_info=True)
    EmbeddedChroma.forget(path)


def _keyword_index(path: Path) -> SideDatabase:
    """The side database: a damaged one is set aside, its journal and trash read out of it into a
    new one, and its keyword index rebuilt from Chroma (`symbiote.storage.chroma.salvage`)."""
    from symbiote.storage.chroma.side_database import SideDatabase

    index = None
    try:
        index = SideDatabase(path / SIDE_DATABASE_FILE)
        index.count()
        return index
    except Exception as exc:
        if index is not None:  # closed before the file moves: a close later would remove the new file's WAL
            index.close()
        if not is_damage(exc):
            raise
        from symbiote.storage.chroma.salvage import set_aside_and_recover

        logging.getLogger(__name__).warning("the side database %s is damaged (%s)", path / SIDE_DATABASE_FILE, exc)
        return set_aside_and_recover(path / SIDE_DATABASE_FILE)


def open_server_store(
    server: ChromaServer, index_dir: Path, model_name: str, dimension: int, sync_seconds: float = 5.0
) -> ChromaMemoryStore:
    """Open the store on a Chroma server (CHROMA_HOST); the keyword index stays local, in `index_dir`.

    Same store class, collections and behaviour as the embedded store; only the client differs.
    `sync_seconds`: how often, at most, the keyword index catches up with other instances' writes.
    `symbiote.storage.chroma.client.ServerMemoryStore` keeps the local keyword index in step with the server.
    """
    from symbiote.storage.chroma.client import connect_server
    from symbiote.storage.chroma.server_store import ServerMemoryStore

    try:
        index_dir.mkdir(parents=True, exist_ok=True)
        record_format(index_dir)
    except OSError as exc:
        raise StoreUnavailableError(
            f"The directory {str(index_dir)!r} for the local keyword index cannot be created "
            f"({exc.strerror or exc}). Set CHROMADB_PATH to a writable directory."
        ) from exc
    client = connect_server(server)
    index = _keyword_index(index_dir)
    return ServerMemoryStore(client, model_name, dimension, index, data_path=None, sync_seconds=sync_seconds)
