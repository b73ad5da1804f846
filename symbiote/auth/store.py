"""Persistent OAuth and API-key state: one small SQLite file in the data directory.

Registered clients, pending consents, authorization codes, grants with their access and refresh
tokens, and API keys survive a restart (so a scale-to-zero wake keeps Claude connected). Every
credential is stored as its SHA-256 digest only: codes, tokens, API keys, client secrets and
consent tickets are high-entropy random strings, so a digest cannot be reversed or guessed, and a
copy of the file grants nothing. Nothing here logs a credential.

The file uses SQLite's default rollback journal (not WAL), which behaves on network file shares;
the `symbiote keys` command and the server may open it at the same time.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, TypeVar

T = TypeVar("T")

ACCESS_PREFIX = "sym_at_"
REFRESH_PREFIX = "sym_rt_"
CODE_PREFIX = "sym_code_"
API_KEY_PREFIX = "sym_key_"
AUTH_DB_NAME = "symbiote-auth.sqlite3"

CODE_TTL = 300.0  # RFC 6749 §4.1.2: short-lived; 5 minutes
PENDING_TTL = 900.0  # time the owner has to approve on the consent page
MAX_PENDING = 200
REFRESH_REUSE_GRACE = 30.0  # a rotated refresh token replayed later than this revokes its grant
UNAPPROVED_CLIENT_TTL = 86400.0  # registrations that never completed a sign-in are pruned after a day
MAX_UNAPPROVED_CLIENTS = 500
KEY_USE_WRITE_INTERVAL = 3600.0  # how often an API key's last-used time is written

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
"""


class AuthStoreUnavailable(RuntimeError):
    """The auth database cannot be opened or written; the message says what to fix."""


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def new_secret(prefix: str = "") -> str:
    return prefix + secrets.token_urlsafe(32)  # 256 bits


def default_auth_db(chromadb_path: Path) -> Path:
    return chromadb_path / AUTH_DB_NAME


@dataclass(frozen=True)
class TokenRecord:
    """What a token grants: its grant's client, scopes and resource, and when it expires."""

    kind: str
    grant_id: str
    client_id: str
    scopes: list[str]
    resource: str | None
    expires_at: float
    used_at: float | None


@dataclass(frozen=True)
class IssuedTokens:
    access_token: str
    refresh_token: str
    access_expires_in: int
    scopes: list[str]


@dataclass(frozen=True)
class ApiKey:
    key_id: str
    name: str
    hint: str
    created_at: float
    last_used_at: float | None
    revoked_at: float | None


class AuthStore:
    """Thread-safe access to the auth database; opened on first use."""

    def __init__(self, path: Path, *, clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self._clock = clock
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._last_cleanup = 0.0

    # -- plumbing -------------------------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
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
                except BaseException:
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

    def _cleanup(self, conn: sqlite3.Connection, now: float) -> None:
        """Drop what can no longer be used; at most once a minute."""
        if now - self._last_cleanup < 60:
            return
        self._last_cleanup = now
        day = 86400.0
        conn.execute("DELETE FROM pending WHERE expires_at < ?", (now,))
        conn.execute("DELETE FROM codes WHERE expires_at < ?", (now - day,))
        conn.execute("DELETE FROM tokens WHERE expires_at < ?", (now - day,))
        conn.execute(
            "DELETE FROM grants WHERE created_at < ? AND NOT EXISTS (SELECT 1 FROM tokens t WHERE t.grant_id = grants.grant_id)",
            (now - day,),
        )
        conn.execute("DELETE FROM clients WHERE approved_at IS NULL AND created_at < ?", (now - UNAPPROVED_CLIENT_TTL,))

    # -- clients --------------------------------------------------------------------------------

    def register_client(self, client_id: str, info: dict[str, Any], client_secret: str | None) -> bool:
        """Save a registration (the secret as a digest). False when too many are waiting for approval."""

        def work(conn: sqlite3.Connection, now: float) -> bool:
            self._cleanup(conn, now)
            (waiting,) = conn.execute(
                "SELECT COUNT(*) FROM clients WHERE approved_at IS NULL AND created_at >= ?",
                (now - UNAPPROVED_CLIENT_TTL,),
            ).fetchone()
            if waiting >= MAX_UNAPPROVED_CLIENTS:
                return False
            conn.execute(
                "INSERT INTO clients (client_id, secret_hash, info, created_at) VALUES (?, ?, ?, ?)",
                (client_id, digest(client_secret) if client_secret else None, json.dumps(info), now),
            )
            return True

        return self._write(work)

    def get_client(self, client_id: str) -> tuple[dict[str, Any], str | None] | None:
        row = self._read(
            lambda conn: conn.execute(
                "SELECT info, secret_hash FROM clients WHERE client_id = ?", (client_id,)
            ).fetchone()
        )
        return (json.loads(row[0]), row[1]) if row else None

    # -- consent tickets ------------------------------------------------------------------------

    def add_pending(self, client_id: str, params: dict[str, Any]) -> str:
        ticket = new_secret()

        def work(conn: sqlite3.Connection, now: float) -> None:
            self._cleanup(conn, now)
            conn.execute(
                "INSERT INTO pending (ticket_hash, client_id, params, created_at, expires_at) VALUES (?, ?, ?, ?, ?)",
                (digest(ticket), client_id, json.dumps(params), now, now + PENDING_TTL),
            )
            conn.execute(
                "DELETE FROM pending WHERE ticket_hash NOT IN "
                "(SELECT ticket_hash FROM pending ORDER BY created_at DESC LIMIT ?)",
                (MAX_PENDING,),
            )

        self._write(work)
        return ticket

    def get_pending(self, ticket: str) -> tuple[str, dict[str, Any]] | None:
        now = self._clock()
        row = self._read(
            lambda conn: conn.execute(
                "SELECT client_id, params FROM pending WHERE ticket_hash = ? AND expires_at > ?",
                (digest(ticket), now),
            ).fetchone()
        )
        return (row[0], json.loads(row[1])) if row else None

    def pop_pending(self, ticket: str) -> tuple[str, dict[str, Any]] | None:
        """Take a ticket exactly once (a second approval with the same ticket finds nothing)."""

        def work(conn: sqlite3.Connection, now: float) -> tuple[str, dict[str, Any]] | None:
            key = digest(ticket)
            row = conn.execute(
                "SELECT client_id, params FROM pending WHERE ticket_hash = ? AND expires_at > ?", (key, now)
            ).fetchone()
            conn.execute("DELETE FROM pending WHERE ticket_hash = ?", (key,))
            return (row[0], json.loads(row[1])) if row else None

        return self._write(work)

    # -- authorization codes --------------------------------------------------------------------

    def add_code(self, client_id: str, data: dict[str, Any]) -> tuple[str, float]:
        code = new_secret(CODE_PREFIX)

        def work(conn: sqlite3.Connection, now: float) -> float:
            conn.execute(
                "INSERT INTO codes (code_hash, client_id, data, expires_at) VALUES (?, ?, ?, ?)",
                (digest(code), client_id, json.dumps(data), now + CODE_TTL),
            )
            return now + CODE_TTL

        return code, self._write(work)

    def load_code(self, code: str) -> tuple[str, dict[str, Any], float] | None:
        """An unused code's (client_id, data, expires_at). A code presented again after use revokes the
        grant it produced (RFC 6749 §4.1.2) and is reported as unknown."""

        def work(conn: sqlite3.Connection, now: float) -> tuple[str, dict[str, Any], float] | None:
            row = conn.execute(
                "SELECT client_id, data, expires_at, used_at, grant_id FROM codes WHERE code_hash = ?", (digest(code),)
            ).fetchone()
            if row is None:
                return None
            if row[3] is not None:
                if row[4]:
                    conn.execute("UPDATE grants SET revoked_at = ? WHERE grant_id = ? AND revoked_at IS NULL", (now, row[4]))
                return None
            return row[0], json.loads(row[1]), row[2]

        return self._write(work)

    def exchange_code(
        self, code: str, client_id: str, scopes: list[str], resource: str | None, access_ttl: int, refresh_ttl: int
    ) -> IssuedTokens | None:
        """Use a code once: mark it used and open a grant with fresh tokens. None if already used/expired."""

        def work(conn: sqlite3.Connection, now: float) -> IssuedTokens | None:
            key = digest(code)
            done = conn.execute(
                "UPDATE codes SET used_at = ? WHERE code_hash = ? AND client_id = ? AND used_at IS NULL AND expires_at > ?",
                (now, key, client_id, now),
            )
            if done.rowcount != 1:
                return None
            grant_id = new_secret()[:22]
            conn.execute(
                "INSERT INTO grants (grant_id, client_id, scopes, resource, created_at) VALUES (?, ?, ?, ?, ?)",
                (grant_id, client_id, " ".join(scopes), resource, now),
            )
            conn.execute("UPDATE codes SET grant_id = ? WHERE code_hash = ?", (grant_id, key))
            conn.execute("UPDATE clients SET approved_at = COALESCE(approved_at, ?) WHERE client_id = ?", (now, client_id))
            return self._issue(conn, now, grant_id, scopes, access_ttl, refresh_ttl)

        return self._write(work)

    # -- tokens ---------------------------------------------------------------------------------

    def _issue(
        self, conn: sqlite3.Connection, now: float, grant_id: str, scopes: list[str], access_ttl: int, refresh_ttl: int
    ) -> IssuedTokens:
        access, refresh = new_secret(ACCESS_PREFIX), new_secret(REFRESH_PREFIX)
        conn.executemany(
            "INSERT INTO tokens (token_hash, kind, grant_id, created_at, expires_at) VALUES (?, ?, ?, ?, ?)",
            [
                (digest(access), "access", grant_id, now, now + access_ttl),
                (digest(refresh), "refresh", grant_id, now, now + refresh_ttl),
            ],
        )
        self._cleanup(conn, now)
        return IssuedTokens(access, refresh, access_ttl, scopes)

    def load_token(self, token: str, kind: str) -> TokenRecord | None:
        """A live token of `kind` (not expired, its grant not revoked)."""
        now = self._clock()
        row = self._read(
            lambda conn: conn.execute(
                "SELECT t.grant_id, g.client_id, g.scopes, g.resource, t.expires_at, t.used_at "
                "FROM tokens t JOIN grants g ON g.grant_id = t.grant_id "
                "WHERE t.token_hash = ? AND t.kind = ? AND g.revoked_at IS NULL AND t.expires_at > ?",
                (digest(token), kind, now),
            ).fetchone()
        )
        if row is None:
            return None
        return TokenRecord(kind, row[0], row[1], row[2].split(), row[3], row[4], row[5])

    def load_refresh(self, token: str) -> TokenRecord | None:
        """A refresh token that may be exchanged. One replayed after rotation (beyond a short grace
        for a client's own retry) is treated as stolen: its whole grant is revoked."""
        record = self.load_token(token, "refresh")
        if record is None or record.used_at is None:
            return record
        if self._clock() - record.used_at > REFRESH_REUSE_GRACE:
            self.revoke_grant(record.grant_id)
        return None

    def rotate_refresh(self, token: str, scopes: list[str], access_ttl: int, refresh_ttl: int) -> IssuedTokens | None:
        """Use a refresh token once and issue a new access + refresh pair on the same grant."""

        def work(conn: sqlite3.Connection, now: float) -> IssuedTokens | None:
            key = digest(token)
            row = conn.execute(
                "SELECT t.grant_id FROM tokens t JOIN grants g ON g.grant_id = t.grant_id WHERE t.token_hash = ? "
                "AND t.kind = 'refresh' AND t.used_at IS NULL AND t.expires_at > ? AND g.revoked_at IS NULL",
                (key, now),
            ).fetchone()
            if row is None:
                return None
            conn.execute("UPDATE tokens SET used_at = ? WHERE token_hash = ?", (now, key))
            return self._issue(conn, now, row[0], scopes, access_ttl, refresh_ttl)

        return self._write(work)

    def revoke_grant(self, grant_id: str) -> None:
        self._write(
            lambda conn, now: conn.execute(
                "UPDATE grants SET revoked_at = ? WHERE grant_id = ? AND revoked_at IS NULL", (now, grant_id)
            )
        )

    def revoke_all_grants(self) -> int:
        """Disconnect every OAuth client (API keys are untouched)."""
        return self._write(
            lambda conn, now: conn.execute("UPDATE grants SET revoked_at = ? WHERE revoked_at IS NULL", (now,)).rowcount
        )

    # -- API keys -------------------------------------------------------------------------------

    def create_api_key(self, name: str) -> tuple[ApiKey, str]:
        key = new_secret(API_KEY_PREFIX)
        key_id = "key_" + secrets.token_hex(4)
        hint = key[: len(API_KEY_PREFIX) + 4] + "…"

        def work(conn: sqlite3.Connection, now: float) -> ApiKey:
            conn.execute(
                "INSERT INTO api_keys (key_id, name, key_hash, hint, created_at) VALUES (?, ?, ?, ?, ?)",
                (key_id, name, digest(key), hint, now),
            )
            return ApiKey(key_id, name, hint, now, None, None)

        return self._write(work), key

    def list_api_keys(self) -> list[ApiKey]:
        rows = self._read(
            lambda conn: conn.execute(
                "SELECT key_id, name, hint, created_at, last_used_at, revoked_at FROM api_keys ORDER BY created_at"
            ).fetchall()
        )
        return [ApiKey(*row) for row in rows]

    def revoke_api_key(self, id_or_name: str) -> list[ApiKey]:
        """Revoke the key with this id, or every active key with this name; the keys revoked."""

        def work(conn: sqlite3.Connection, now: float) -> list[ApiKey]:
            rows = conn.execute(
                "SELECT key_id, name, hint, created_at, last_used_at FROM api_keys "
                "WHERE (key_id = ? OR name = ?) AND revoked_at IS NULL",
                (id_or_name, id_or_name),
            ).fetchall()
            by_id = [row for row in rows if row[0] == id_or_name]
            rows = by_id or rows
            for row in rows:
                conn.execute("UPDATE api_keys SET revoked_at = ? WHERE key_id = ?", (now, row[0]))
            return [ApiKey(*row, now) for row in rows]

        return self._write(work)

    def check_api_key(self, key: str) -> ApiKey | None:
        """The active key this secret belongs to (its last-used time is written at most hourly)."""
        now = self._clock()
        row = self._read(
            lambda conn: conn.execute(
                "SELECT key_id, name, hint, created_at, last_used_at, revoked_at FROM api_keys "
                "WHERE key_hash = ? AND revoked_at IS NULL",
                (digest(key),),
            ).fetchone()
        )
        if row is None:
            return None
        found = ApiKey(*row)
        if found.last_used_at is None or now - found.last_used_at > KEY_USE_WRITE_INTERVAL:
            self._write(
                lambda conn, stamp: conn.execute(
                    "UPDATE api_keys SET last_used_at = ? WHERE key_id = ?", (stamp, found.key_id)
                )
            )
        return found
