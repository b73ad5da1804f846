"""OAuth state in the auth database: registered clients, consent tickets, codes, grants and tokens.

A code is used once and lives minutes; a grant holds an access and a refresh token, and a refresh
token is rotated on use, so one replayed after rotation reveals a stolen copy and revokes its grant.
What can no longer be used is pruned as the store is written.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any

from symbiote.auth._sqlite import AuthDatabase, digest, new_secret

ACCESS_PREFIX = "sym_at_"
REFRESH_PREFIX = "sym_rt_"
CODE_PREFIX = "sym_code_"

CODE_TTL = 300.0  # RFC 6749 §4.1.2: short-lived; 5 minutes
PENDING_TTL = 900.0  # time the owner has to approve on the consent page
MAX_PENDING = 2000  # sign-ins waiting for the owner; past it new ones are refused, none is dropped
REFRESH_REUSE_GRACE = 30.0  # a rotated refresh token replayed later than this revokes its grant
UNAPPROVED_CLIENT_TTL = 3600.0  # registrations that never completed a sign-in are pruned after an hour
MAX_UNAPPROVED_CLIENTS = 500


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


class OAuthRecords(AuthDatabase):
    """The OAuth half of `AuthStore`: each method is one read or one transaction."""

    _last_cleanup = 0.0

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

    def add_pending(self, client_id: str, params: dict[str, Any]) -> str | None:
        """A consent ticket for a parked authorization request; None when too many are waiting.

        A full table refuses the new request and never drops one in progress, so a flood of
        authorization requests cannot cut short the owner's own sign-in.
        """
        ticket = new_secret()

        def work(conn: sqlite3.Connection, now: float) -> bool:
            self._cleanup(conn, now)
            (waiting,) = conn.execute("SELECT COUNT(*) FROM pending WHERE expires_at > ?", (now,)).fetchone()
            if waiting >= MAX_PENDING:
                return False
            conn.execute(
                "INSERT INTO pending (ticket_hash, client_id, params, created_at, expires_at) VALUES (?, ?, ?, ?, ?)",
                (digest(ticket), client_id, json.dumps(params), now, now + PENDING_TTL),
            )
            return True

        return ticket if self._write(work) else None

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
                    conn.execute(
                        "UPDATE grants SET revoked_at = ? WHERE grant_id = ? AND revoked_at IS NULL", (now, row[4])
                    )
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
            conn.execute(
                "UPDATE clients SET approved_at = COALESCE(approved_at, ?) WHERE client_id = ?", (now, client_id)
            )
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
            # The access tokens issued before this refresh end now: the client holds the new one.
            conn.execute(
                "UPDATE tokens SET expires_at = ? WHERE grant_id = ? AND kind = 'access' AND expires_at > ?",
                (now, row[0], now),
            )
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
