"""Console sessions signed out by the owner, kept in the sign-in database so a restart (or another
instance) does not bring a signed-out cookie back. Each is kept as a digest of its random id,
until the time it would have expired anyway."""

from __future__ import annotations

import sqlite3

from symbiote.auth._sqlite import AuthDatabase, digest


class ConsoleSignOuts(AuthDatabase):
    """The console half of `AuthStore`: one write per sign-out, one read per session check."""

    def sign_out_console(self, session_id: str, expires_at: float) -> None:
        def work(conn: sqlite3.Connection, now: float) -> None:
            conn.execute("DELETE FROM console_signouts WHERE expires_at < ?", (now,))
            conn.execute(
                "INSERT OR REPLACE INTO console_signouts (session_hash, expires_at) VALUES (?, ?)",
                (digest(session_id), expires_at),
            )

        self._write(work)

    def console_signed_out(self, session_id: str) -> bool:
        row = self._read(
            lambda conn: conn.execute(
                "SELECT 1 FROM console_signouts WHERE session_hash = ?", (digest(session_id),)
            ).fetchone()
        )
        return row is not None

    def forget_console_signouts(self) -> None:
        """After the signing key changed no old session can be valid: nothing left to remember."""
        self._write(lambda conn, now: conn.execute("DELETE FROM console_signouts"))
