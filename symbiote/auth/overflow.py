"""Sign-ins past the cap on waiting ones: carried in a signed ticket, stored nowhere.

Every authorization request waits in the sign-in database until the owner approves it, and at
most MAX_PENDING may wait: a flood of requests from many addresses must not grow the database.
A request that finds the table full is not refused, or the flood would lock the owner out for as
long as it lasts: its parked state goes into the consent ticket itself, signed with a key this
process made, so it costs nothing to hold. Approving it still takes the owner secret, through the
same checks as any other; so the owner jumps the queue, and nobody else gets anything. Each
ticket is taken once and lives as long as a stored one.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import os
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from symbiote.auth._oauth_records import PENDING_TTL

log = logging.getLogger("symbiote.auth")
PREFIX = "o."
WARN_EVERY = 60.0
MAX_PAYLOAD = 6 * 1024  # a parked request is a few hundred bytes; a longer one is refused as before
MAX_TAKEN = 10_000


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class OverflowTickets:
    """Issues, reads and takes (once) the signed tickets of sign-ins that found the table full."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._key = os.urandom(32)
        self._clock = clock
        self._taken: OrderedDict[str, float] = OrderedDict()  # signature: when the ticket expires
        self._issued = 0
        self._warned = 0.0

    @staticmethod
    def holds(ticket: str) -> bool:
        return ticket.startswith(PREFIX)

    def _sign(self, body: str) -> str:
        return _b64(hmac.new(self._key, body.encode("ascii"), hashlib.sha256).digest())

    def issue(self, client_id: str, params: dict[str, Any]) -> str | None:
        """A ticket carrying the request, or None when it is too large to carry."""
        payload = json.dumps({"c": client_id, "p": params, "e": self._clock() + PENDING_TTL}, separators=(",", ":"))
        if len(payload) > MAX_PAYLOAD:
            return None
        body = _b64(payload.encode("utf-8"))
        self._issued += 1
        if time.monotonic() - self._warned >= WARN_EVERY:
            self._warned = time.monotonic()
            log.warning(
                "sign-ins waiting for the owner are at their cap: %d carried in their tickets so far", self._issued
            )
        return f"{PREFIX}{body}.{self._sign(body)}"

    def read(self, ticket: str) -> tuple[str, dict[str, Any]] | None:
        """The client and parked request, or None when the ticket is forged, expired or taken."""
        if not self.holds(ticket) or len(ticket) > 2 * MAX_PAYLOAD or ticket.count(".") != 2 or not ticket.isascii():
            return None
        body, signature = ticket[len(PREFIX) :].split(".")
        if not hmac.compare_digest(signature, self._sign(body)) or signature in self._taken:
            return None
        data = json.loads(_unb64(body))  # signed by this process: its own JSON
        if data["e"] <= self._clock():
            return None
        return data["c"], data["p"]

    def take(self, ticket: str) -> tuple[str, dict[str, Any]] | None:
        """As `read`, and the ticket is used up."""
        found = self.read(ticket)
        if found is None:
            return None
        now = self._clock()
        while self._taken and (len(self._taken) >= MAX_TAKEN or next(iter(self._taken.values())) <= now):
            self._taken.popitem(last=False)
        self._taken[ticket.rsplit(".", 1)[1]] = now + PENDING_TTL
        return found
