"""Which Chroma a Symbiote instance talks to: the embedded store in CHROMADB_PATH, or a Chroma server.

With `CHROMA_HOST` set, every collection (memories, passages, conversation history) lives on a
Chroma server reached through `chromadb.HttpClient`; nothing else changes, because the store
classes take any Chroma client. Several Symbiote instances can then share one store.

The keyword index has no counterpart on a Chroma server: `symbiote.storage.chroma.server_store`
keeps each instance's local copy in step. Connecting imports neither Chroma nor numpy until a
client is made, so the process's parent can import this on its way to listening.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from symbiote.errors import StoreUnavailableError
from symbiote.storage.data_format import record_format

if TYPE_CHECKING:
    from symbiote.config import Settings
    from symbiote.storage.chroma.embedded import EmbeddedChroma

log = logging.getLogger(__name__)


def import_chromadb() -> Any:
    """`chromadb`, for a Chroma server's client (the embedded store needs only Chroma's Rust core:
    `symbiote.storage.chroma.embedded`), imported after numpy (chromadb imports numpy, and a first
    numpy import racing another worker thread's fails: `symbiote.workers.import_numpy`), without
    its signature checks.

    Chroma marks many methods with the `overrides` package's decorator, which compares each
    one's signature with its base class's as the class is created: a large part of Chroma's
    import, on the way to the first search. That check guards Chroma's own development, and the
    installed code is the same at every start. The mark the decorator leaves
    (`__override__`, which `overrides.EnforceOverrides` looks for) is still set.
    """
    import sys

    from symbiote.workers import import_numpy

    import_numpy()
    if "chromadb" not in sys.modules:
        with _unchecked_overrides():
            import chromadb.api.rust  # chromadb, and the clients' classes
    import chromadb

    return chromadb


@contextlib.contextmanager
def _unchecked_overrides() -> Iterator[None]:
    """`overrides.override`/`overrides` as a mark only, while Chroma's classes are created."""
    import overrides

    def mark(method: Any = None, **_options: Any) -> Any:
        if method is None:  # used as @override(check_signature=...)
            return mark
        method.__override__ = True
        return method

    saved = overrides.override, overrides.overrides
    overrides.override = overrides.overrides = mark
    try:
        yield
    finally:
        overrides.override, overrides.overrides = saved


def _chroma_settings(**extra: Any) -> Any:
    """The settings of a Chroma server's clients: no telemetry, no reset."""
    from chromadb.config import Settings as ChromaSettings

    return ChromaSettings(anonymized_telemetry=False, allow_reset=False, **extra)


@dataclass(frozen=True)
class ChromaServer:
    """Where a Chroma server is and how to authenticate to it."""

    host: str
    port: int = 8000
    ssl: bool = False
    auth_token: str = field(default="", repr=False)
    auth_header: str = "Authorization"  # "Authorization" sends "Bearer <token>"; "X-Chroma-Token" the token
    tenant: str = "default_tenant"
    database: str = "default_database"

    @classmethod
    def from_settings(cls, settings: Settings) -> ChromaServer | None:
        if not settings.chroma_host:
            return None
        return cls(
            host=settings.chroma_host,
            port=settings.chroma_port,
            ssl=settings.chroma_ssl,
            auth_token=settings.chroma_auth_token,
            auth_header=settings.chroma_auth_header,
            tenant=settings.chroma_tenant,
            database=settings.chroma_database,
        )

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.ssl else 'http'}://{host}:{self.port}"

    def describe(self) -> str:
        """For logs and messages: never the token."""
        where = self.url
        if (self.tenant, self.database) != ("default_tenant", "default_database"):
            where += f" (tenant {self.tenant}, database {self.database})"
        return where

    @property
    def headers(self) -> dict[str, str]:
        if not self.auth_token:
            return {}
        if self.auth_header.lower() == "authorization":
            return {"Authorization": f"Bearer {self.auth_token}"}
        return {self.auth_header: self.auth_token}


HEARTBEAT_TIMEOUT_SECONDS = 2.0  # a server slower than this to say it is alive is reported as unreachable
HEARTBEAT_CACHE_SECONDS = 5.0  # health polled often asks the server at most this often
_HEARTBEATS: dict[ChromaServer, tuple[float, str | None]] = {}  # server -> (time.monotonic() asked, problem)
_HEARTBEAT_LOCK = threading.Lock()


def server_problem(server: ChromaServer) -> str | None:
    """Why the Chroma server cannot be used now, or None when it answers its heartbeat (for `/health`:
    a store opened while the server was up says nothing of it now). Blocking; asked at most every
    HEARTBEAT_CACHE_SECONDS per server, each time within HEARTBEAT_TIMEOUT_SECONDS."""
    import time

    import httpx

    with _HEARTBEAT_LOCK:
        last = _HEARTBEATS.get(server)
        if last is not None and time.monotonic() - last[0] < HEARTBEAT_CACHE_SECONDS:
            return last[1]
    try:
        reply = httpx.get(f"{server.url}/api/v2/heartbeat", headers=server.headers, timeout=HEARTBEAT_TIMEOUT_SECONDS)
        problem = None if reply.status_code == 200 else f"its heartbeat answered HTTP {reply.status_code}"
    except httpx.HTTPError as exc:
        problem = f"{type(exc).__name__}: {exc}"
    if problem is not None:
        problem = (
            f"The Chroma server at {server.describe()} does not answer ({problem}). Check CHROMA_HOST/CHROMA_PORT "
            "(and CHROMA_SSL), and that the server is running (`docker compose ps chroma`)."
        )
    with _HEARTBEAT_LOCK:
        _HEARTBEATS[server] = (time.monotonic(), problem)
    return problem


def _refused(exc: BaseException) -> bool:
    text = str(exc).lower()
    return any(word in text for word in ("401", "403", "unauthorized", "forbidden", "permission", "authenticat"))


def connect_server(server: ChromaServer) -> Any:
    """A `chromadb.HttpClient` for `server`, its database created if missing.

    Raises StoreUnavailableError saying what to fix when the server cannot be reached or refuses
    the credentials; the engine reports it and tries again on the next call.
    """
    chromadb = import_chromadb()
    from chromadb.errors import NotFoundError

    try:
        if server.database != "default_database":
            # A database of our own on a shared server (CHROMA_DATABASE): created on first use.
            admin = chromadb.AdminClient(
                _chroma_settings(
                    chroma_api_impl="chromadb.api.fastapi.FastAPI",
                    chroma_server_host=server.host,
                    chroma_server_http_port=server.port,
                    chroma_server_ssl_enabled=server.ssl,
                    chroma_server_headers=server.headers or None,
                )
            )
            try:
                admin.get_database(server.database, tenant=server.tenant)
            except NotFoundError:
                try:
                    admin.create_database(server.database, tenant=server.tenant)
                    log.info("created database %r on the Chroma server %s", server.database, server.url)
                except Exception:  # another instance may have created it meanwhile: get it, or raise
                    log.debug("creating database %r failed; it may exist now", server.database, exc_info=True)
                    admin.get_database(server.database, tenant=server.tenant)
        # Fresh settings each time: HttpClient writes the host and port into the object it is given.
        return chromadb.HttpClient(
            host=server.host,
            port=server.port,
            ssl=server.ssl,
            headers=server.headers or None,
            settings=_chroma_settings(),
            tenant=server.tenant,
            database=server.database,
        )
    except Exception as exc:
        if _refused(exc):
            raise StoreUnavailableError(
                f"The Chroma server at {server.describe()} refused the credentials ({exc}). "
                "Check CHROMA_AUTH_TOKEN and CHROMA_AUTH_HEADER."
            ) from exc
        raise StoreUnavailableError(
            f"Cannot use the Chroma server at {server.describe()}: {exc}. Check CHROMA_HOST/CHROMA_PORT "
            "(and CHROMA_SSL), and that the server is running (`docker compose ps chroma`)."
        ) from exc


def embedded_client(path: Path) -> EmbeddedChroma:
    """The embedded store's client at `path` (`symbiote.storage.chroma.embedded`: Chroma's Rust core
    without its Python client), the one `storage.open_embedded_store` uses."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        record_format(path)  # before Chroma touches anything: a newer release's directory stays as it is
    except OSError as exc:
        raise StoreUnavailableError(
            f"The memory store directory {str(path)!r} cannot be created ({exc.strerror or exc}). "
            "Fix its permissions or set CHROMADB_PATH to a writable directory."
        ) from exc
    _write_ahead_log(path)
    from symbiote.storage.chroma.embedded import EmbeddedChroma

    return EmbeddedChroma.open(path)


_LOGGED: set[Path] = set()  # data directories whose Chroma file this process has put in WAL mode


def _write_ahead_log(path: Path) -> None:
    """Chroma's SQLite file in write-ahead-log mode (kept in the file; Chroma leaves it so): with its
    default rollback journal every add waits for about eight fsyncs, with the log about two, and an
    acknowledged write is as durable. Only before this process's first client on `path`: closing
    another connection to a file releases every POSIX lock the process holds on it, Chroma's too.
    A file that cannot be read is left for Chroma's open to report."""
    key = path.resolve()
    if key in _LOGGED:
        return
    _LOGGED.add(key)
    import sqlite3

    try:
        conn = sqlite3.connect(str(path / "chroma.sqlite3"), timeout=10)
        try:
            if str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
                conn.execute("PRAGMA journal_mode=WAL")
        finally:
            conn.close()
    except sqlite3.Error as exc:
        log.info("could not switch %s to write-ahead logging: %s", path, exc)


class ChromaClients:
    """The Chroma client of one runtime for the stores beside the memories (conversation history).

    Made on first use, then shared; a failure is not remembered, so the next call tries again.
    """

    def __init__(self, server: ChromaServer | None, path: Path) -> None:
        self.server = server
        self.path = path
        self._client: Any = None
        self._lock = threading.Lock()

    def get(self) -> Any:
        with self._lock:
            if self._client is None:
                self._client = connect_server(self.server) if self.server else embedded_client(self.path)
            return self._client

    def describe(self) -> str:
        return self.server.describe() if self.server else str(self.path)

    def close(self) -> None:
        """Close the client, if one was made: Chroma keeps an embedded store's system (its memory and
        threads) for the process's life until every client of that path is closed."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()
