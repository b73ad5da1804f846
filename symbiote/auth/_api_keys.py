"""API keys in the auth database: long-lived bearer tokens the owner creates with `symbiote keys`.

A key is shown once at creation; only its digest and a short hint are kept. Its last-used time is
written at most hourly, so checking a key on every request rarely writes.
"""

from __future__ import annotations

import secrets
import sqlite3
from dataclasses import dataclass

from symbiote.auth._sqlite import AuthDatabase, digest, new_secret

API_KEY_PREFIX = "sym_key_"
KEY_USE_WRITE_INTERVAL = 3600.0  # how often an API key's last-used time is written


@dataclass(frozen=True)
class ApiKey:
    key_id: str
    name: str
    hint: str
    created_at: float
    last_used_at: float | None
    revoked_at: float | None


class ApiKeys(AuthDatabase):
    """The API-key half of `AuthStore`."""

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
            return [ApiKey(row[0], row[1], row[2], row[3], row[4], now) for row in rows]

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
