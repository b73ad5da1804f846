"""The console's sign-in session and the CSRF token that every write must carry.

A session is a signed cookie (expiry, random id, HMAC), checked by every instance that shares the
data directory. The signing key is random, kept in the private data directory
(`console-session.key`, 0600) and never derived from the owner secret or its hash, so reading the
app's settings gives no way to forge one; `symbiote console sign-out-all` and `symbiote oauth
revoke-all` replace the key, ending every session, and a server notices the new file on the next
request. Signing out records the session's id (as a digest) in the sign-in database, so it stays
signed out across restarts; the 12-hour lifetime bounds the rest. The CSRF token is an HMAC of
the session id: a page from another site cannot read it, so it cannot make a write the owner did
not make.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

COOKIE = "symbiote_console"
SESSION_SECONDS = 12 * 3600
KEY_FILE = "console-session.key"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


class SignOuts(Protocol):
    """Where signed-out sessions are remembered (`AuthStore`: the sign-in database)."""

    def sign_out_console(self, session_id: str, expires_at: float) -> None: ...

    def console_signed_out(self, session_id: str) -> bool: ...


class SessionKey:
    """The signing key in `path` (made on first use, replaced by `rotate`), or, with no path, a
    random key for this process only (a loopback server without auth, where nobody signs in)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._key = os.urandom(32) if path is None else b""
        self._stamp: tuple[int, int, int] | None = None

    def current(self) -> bytes:
        """The key now in force: the file is read again when it was replaced (another process rotated it)."""
        if self.path is None:
            return self._key
        with self._lock:
            try:
                info = os.stat(self.path)
            except FileNotFoundError:
                _write_new(self.path, replace=False)
                info = os.stat(self.path)
            stamp = (info.st_ino, info.st_mtime_ns, info.st_size)
            if stamp != self._stamp:
                self._key = base64.urlsafe_b64decode(self.path.read_bytes().strip() + b"==")
                self._stamp = stamp
            return self._key

    def rotate(self) -> None:
        """A new random key: every session signed with the old one ends."""
        if self.path is None:
            self._key = os.urandom(32)
            return
        _write_new(self.path, replace=True)


def _write_new(path: Path, *, replace: bool) -> None:
    """Write a fresh key to a private temporary file, then put it in place atomically (a first key
    only if none exists yet, so two processes starting together agree on one)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(6)}")
    handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(_b64(os.urandom(32)).encode("ascii") + b"\n")
            out.flush()
            os.fsync(out.fileno())
        if replace:
            os.replace(temporary, path)
        else:
            try:
                os.link(temporary, path)
            except FileExistsError:
                pass  # another process made it first: use theirs
    finally:
        temporary.unlink(missing_ok=True)


def key_path(data_dir: Path) -> Path:
    return data_dir / KEY_FILE


@dataclass(frozen=True)
class Session:
    session_id: str
    expires: int  # unix seconds
    csrf: str


class Sessions:
    """Makes, checks and revokes console sessions signed with one key.

    `check` and `revoke` may read or write the sign-in database: call them from a worker thread.
    """

    def __init__(
        self,
        key: SessionKey,
        signouts: SignOuts | None = None,
        lifetime: int = SESSION_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._key = key
        self._signouts = signouts
        self.lifetime = lifetime
        self._clock = clock
        self._revoked: set[str] = set()  # without a sign-in database (auth off): this process only

    def _now(self) -> int:
        return int(self._clock())

    def _sign(self, key: bytes, text: str) -> str:
        return _b64(hmac.new(key, text.encode("ascii"), hashlib.sha256).digest())

    def new(self) -> tuple[Session, str]:
        """A fresh session and its cookie value."""
        key = self._key.current()
        session_id = secrets.token_urlsafe(18)
        expires = self._now() + self.lifetime
        body = f"{expires}.{session_id}"
        return Session(session_id, expires, self._sign(key, f"csrf:{session_id}")), f"{body}.{self._sign(key, body)}"

    def check(self, cookie: str | None) -> Session | None:
        """The session a cookie carries, or None when it is missing, forged, expired or signed out."""
        if not cookie or cookie.count(".") != 2 or len(cookie) > 200 or not cookie.isascii():
            return None
        expires_text, session_id, signature = cookie.split(".")
        key = self._key.current()
        if not hmac.compare_digest(signature, self._sign(key, f"{expires_text}.{session_id}")):
            return None
        if (
            not (expires_text.isascii() and expires_text.isdigit())
            or int(expires_text) <= self._now()
            or self._signed_out(session_id)
        ):
            return None
        return Session(session_id, int(expires_text), self._sign(key, f"csrf:{session_id}"))

    def _signed_out(self, session_id: str) -> bool:
        if self._signouts is None:
            return session_id in self._revoked
        return self._signouts.console_signed_out(session_id)

    def revoke(self, session: Session) -> None:
        """Sign this session out, for good (remembered until it would have expired anyway)."""
        if self._signouts is None:
            self._revoked.add(session.session_id)
            return
        self._signouts.sign_out_console(session.session_id, float(session.expires))

    @staticmethod
    def csrf_ok(session: Session | None, token: str | None) -> bool:
        if session is None or not token or not token.isascii():  # every token made here is ASCII
            return False
        return hmac.compare_digest(session.csrf, token)
