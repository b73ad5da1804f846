"""The SQLite file under the auth store: its schema, one connection, and transactions.

The file uses SQLite's default rollback journal (not WAL), which behaves on network file shares;
the `symbiote keys` command and the server may open it at the same time. Every credential is kept
as its SHA-256 digest (`digest`), so a copy of the file grants nothing.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from symbiote.errors import DataFormatError, SymbioteError
from symbiote.storage import recorded_format

T = TypeVar("T")

AUTH_DB_NAME = "symbiote-auth.sqlite3"

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS clients (
    client_id TEXT PRIMARY KEY, secret_hash TEXT, info TEXT NOT NULL,
    created_at REAL NOT NULL, approved_at REAL);
CREATE TABLE IF NOT EXISTS pending (
    ticket_hash TEXT PRIMARY KEY, client_id TEXT NOT NULL, params TEXT NOT NULL,
    created_at REAL NOT NULL, expires_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS codes (
    code_hash TEXT PRIMARY KEY, client_id TEXT NOT NULL, data TEXT NOT NULL,
    expires_at REAL NOT NULL, used_at REAL, grant_id TEXT);
CREATE TABLE IF NOT EXISTS grants (
    grant_id TEXT PRIMARY KEY, client_id TEXT NOT NULL, scopes TEXT NOT NULL, resource TEXT,
    created_at REAL NOT NULL, revoked_at REAL);
CREATE TABLE IF NOT EXISTS tokens (
    token_hash TEXT PRIMARY KEY, kind TEXT NOT NULL, grant_id TEXT NOT NULL,
    created_at REAL NOT NULL, expires_at REAL NOT NULL, used_at REAL);
CREATE INDEX IF NOT EXISTS tokens_by_grant ON tokens (grant_id);
CREATE TABLE IF NOT EXISTS api_keys (
    key_id TEXT PRIMARY KEY, name TEXT NOT NULL, key_hash TEXT NOT NULL UNIQUE, hint TEXT NOT NULL,
    created_at REAL NOT NULL, last_used_at REAL, revoked_at REAL);
CREATE TABLE IF NOT EXISTS console_signouts (session_hash TEXT PRIMARY KEY, expires_at REAL NOT NULL);
"""


class AuthStoreUnavailable(SymbioteError):
    """The auth database cannot be opened or written; the message says what to fix."""


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def new_secret(prefix: str = "") -> str:
    return prefix + secrets.token_urlsafe(32)  # 256 bits


def default_auth_db(chromadb_path: Path) -> Path:
    return chromadb_path / AUTH_DB_NAME


class AuthDatabase:
    """One lazily opened connection, shared by threads under a lock; every failure says what to fix."""

    def __init__(self, path: Path, *, clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self._clock = clock
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            try:
                recorded_format(self.path.parent)  # a newer release's data directory: refused, left as it is
            except DataFormatError as exc:
                raise AuthStoreUnavailable(str(exc)) from exc
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                fresh = not self.path.exists()
                conn = sqlite3.connect(self.path, timeout=10.0, isolation_level=None, check_same_thread=False)
                conn.execute("PRAGMA busy_timeout = 10000")
                conn.executescript(SCHEMA)
                conn.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', '1')")
                if fresh:
                    try:
                        os.chmod(self.path, 0o600)
                    except OSError:  # e.g. an SMB share that ignores modes
                        pass
            except (sqlite3.Error, OSError) as exc:
                raise AuthStoreUnavailable(
                    f"The sign-in database {self.path} cannot be opened ({exc}). Make its directory writable "
                    "or point SYMBIOTE_AUTH_DB at a writable file."
                ) from exc
            self._conn = conn
        return self._conn

    def _read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        with self._lock:
            conn = self._connection()
            try:
                return fn(conn)
            except sqlite3.Error as exc:
                raise AuthStoreUnavailable(f"The sign-in database {self.path} failed: {exc}") from exc

    def _write(self, fn: Callable[[sqlite3.Connection, float], T]) -> T:
        with self._lock:
            conn = self._connection()
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    result = fn(conn, self._clock())
                except BaseException:  # any failure, even a cancellation, must not leave the write half done
                    conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
                return result
            except sqlite3.Error as exc:
                raise AuthStoreUnavailable(f"The sign-in database {self.path} failed: {exc}") from exc

    def check(self) -> None:
        """Open the database now (raises AuthStoreUnavailable with a readable message)."""
        self._read(lambda conn: conn.execute("SELECT 1").fetchone())

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
