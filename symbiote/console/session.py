"""The console's sign-in session and the CSRF token that every write must carry.

A session is a signed cookie (expiry, random id, HMAC), not a server-side record: every
instance behind a load balancer can check it, and a restart signs nobody out. The signing key
is derived from the owner secret (or its hash), so changing the secret ends every session.
Signing out records the session's id as revoked in this instance; the short lifetime bounds
the rest. The CSRF token is an HMAC of the session id: a page from another site cannot read it,
so it cannot make a write the owner did not make.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass

COOKIE = "symbiote_console"
SESSION_SECONDS = 12 * 3600
MAX_REVOKED = 10_000


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def session_key(secret_material: str) -> bytes:
    """The signing key: from the owner secret (or its hash) when there is one, else random for this process."""
    if not secret_material:
        return os.urandom(32)
    return hmac.new(b"symbiote console session v1", secret_material.encode("utf-8"), hashlib.sha256).digest()


@dataclass(frozen=True)
class Session:
    session_id: str
    expires: int  # unix seconds
    csrf: str


class Sessions:
    """Makes, checks and revokes console sessions signed with one key."""

    def __init__(self, key: bytes, lifetime: int = SESSION_SECONDS, clock: object = time.time) -> None:
        self._key = key
        self.lifetime = lifetime
        self._clock = clock
        self._revoked: OrderedDict[str, int] = OrderedDict()

    def _now(self) -> int:
        return int(self._clock())  # type: ignore[operator]

    def _sign(self, text: str) -> str:
        return _b64(hmac.new(self._key, text.encode("ascii"), hashlib.sha256).digest())

    def _csrf(self, session_id: str) -> str:
        return self._sign(f"csrf:{session_id}")

    def new(self) -> tuple[Session, str]:
        """A fresh session and its cookie value."""
        session_id = secrets.token_urlsafe(18)
        expires = self._now() + self.lifetime
        body = f"{expires}.{session_id}"
        return Session(session_id, expires, self._csrf(session_id)), f"{body}.{self._sign(body)}"

    def check(self, cookie: str | None) -> Session | None:
        """The session a cookie carries, or None when it is missing, forged, expired or revoked."""
        if not cookie or cookie.count(".") != 2 or len(cookie) > 200:
            return None
        expires_text, session_id, signature = cookie.split(".")
        if not hmac.compare_digest(signature, self._sign(f"{expires_text}.{session_id}")):
            return None
        if not expires_text.isdigit() or int(expires_text) <= self._now() or session_id in self._revoked:
            return None
        return Session(session_id, int(expires_text), self._csrf(session_id))

    def revoke(self, session: Session) -> None:
        self._revoked[session.session_id] = session.expires
        now = self._now()
        while self._revoked and (len(self._revoked) > MAX_REVOKED or next(iter(self._revoked.values())) <= now):
            self._revoked.popitem(last=False)

    @staticmethod
    def csrf_ok(session: Session | None, token: str | None) -> bool:
        return session is not None and bool(token) and hmac.compare_digest(session.csrf, token or "")
