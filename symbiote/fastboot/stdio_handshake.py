"""The MCP handshake over stdio, answered from a cache while the MCP SDK is still loading.

The stdio twin of `symbiote.fastboot.handshake`: Claude Desktop starts `symbiote stdio`, writes
`initialize` at once and gives up if the answer is slow, yet the answer is the same every time
for the same code and settings. So the server records the SDK's own stdio answers - through
the SDK's `stdio_server`, line for line as they go on the wire - in `handshake-stdio.json` in
the data directory (and the user's cache directory: `symbiote.fastboot.cache_files`), and
`symbiote.fastboot.stdio_relay` replays them on the next start while the SDK loads.

Unlike HTTP, stdio is one stateful session: the SDK must see `initialize` itself. So the cache
answers only the opening of a legacy-era session: a plain `initialize` as the very first line
(answered, and still passed to the SDK, whose own reply is then dropped), then
`notifications/initialized` (passed on), then plain `ping`, `prompts/list`,
`resources/list`, `resources/templates/list` (answered; they change no state). The first line
that is anything else ends the cache's part: from there every line goes to the SDK, in order.
The fingerprint is `symbiote.fastboot.handshake.fingerprint` for the stdio settings.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

from symbiote import __version__
from symbiote.config import Settings
from symbiote.fastboot import cache_files
from symbiote.fastboot.handshake import PROBE_ID, _plain_capabilities, _plain_client, _strict_json, fingerprint

log = logging.getLogger(__name__)

CACHE_FILE = "handshake-stdio.json"
FORMAT = 2
# Requests answered after a cached initialize: no params, and no state in the SDK's session. Not
# `tools/list`: the SDK answers it once the tools can answer promptly (`symbiote.mcp.server`).
AFTER_INITIALIZE = ("ping", "prompts/list", "resources/list", "resources/templates/list")
INITIALIZED = "notifications/initialized"


def cache_path(settings: Settings) -> Path:
    return settings.chromadb_path / CACHE_FILE


def stdio_settings(settings: Settings) -> Settings:
    return dataclasses.replace(settings, transport="stdio")


@dataclasses.dataclass(frozen=True)
class Answer:
    """What to do with one line read before the SDK took over."""

    reply: bytes | None  # a line to write to stdout now (with its newline), or None
    forward: bool  # whether the SDK must still see the line
    suppress_id: int | str | None = None  # the SDK's reply to this id is already answered: drop it
    ends_opening: bool = False  # the cache answers nothing more in this session


FORWARD = Answer(None, True, ends_opening=True)  # the SDK's line, and so is every line after it
PASS_ON = Answer(None, True)  # the SDK's line (notifications/initialized); the cache goes on


class StdioHandshakeCache:
    """Recorded stdio answers, keyed `method|offered protocol version`."""

    def __init__(self, print_: str, replies: Mapping[str, str]) -> None:
        self.fingerprint = print_
        self.replies = dict(replies)

    @classmethod
    def load(cls, settings: Settings, print_: str | None = None) -> StdioHandshakeCache | None:
        """The recorded cache if it matches these settings and this code; None otherwise."""
        print_ = print_ or fingerprint(stdio_settings(settings))
        raw = cache_files.read(settings, CACHE_FILE, FORMAT, print_)
        try:
            return cls(print_, {str(key): str(value) for key, value in raw["replies"].items()}) if raw else None
        except (KeyError, TypeError, AttributeError):
            return None

    def save(self, settings: Settings) -> Path | None:
        """Write atomically to the data directory and the user's cache; where it went first
        (None: nowhere writable, which only means no cache)."""
        return cache_files.write(
            settings, CACHE_FILE, {"format": FORMAT, "fingerprint": self.fingerprint, "replies": self.replies}
        )

    def forget(self, settings: Settings) -> None:
        """Never use this recording again (the SDK answered differently)."""
        cache_files.forget(settings, CACHE_FILE, self.fingerprint)

    def session(self) -> OpeningSession:
        return OpeningSession(self)


class OpeningSession:
    """Follows one stdio session's opening lines and answers those the cache may answer."""

    def __init__(self, cache: StdioHandshakeCache) -> None:
        self._cache = cache
        self._offered: str | None = None  # the version offered in the cached initialize
        self.open = True  # False once a line went to the SDK unanswered: the rest follows it

    def answer(self, line: bytes) -> Answer:
        """What to do with `line` (one line read from stdin, its newline included)."""
        if not self.open:
            return FORWARD
        found = self._answer(line)
        if found.ends_opening:
            self.open = False
        return found

    def _answer(self, line: bytes) -> Answer:
        # The SDK reads stdin as text with universal newlines; a line with a carriage return
        # (or none at the end) might be split differently, so it goes to the SDK.
        if not line.endswith(b"\n") or b"\r" in line:
            return FORWARD
        message = _strict_json(line[:-1])
        if (
            not isinstance(message, dict)
            or message.get("jsonrpc") != "2.0"
            or set(message) - {"jsonrpc", "id", "method", "params"}
        ):
            return FORWARD
        method = message.get("method")
        params = message.get("params", {})
        if not isinstance(params, dict):
            return FORWARD
        if "id" not in message:
            if method == INITIALIZED and self._offered is not None and not params:
                return PASS_ON
            return FORWARD
        request_id = message["id"]
        if isinstance(request_id, bool) or not isinstance(request_id, (int, str)):
            return FORWARD
        if self._offered is None:
            if method != "initialize" or set(params) != {"protocolVersion", "capabilities", "clientInfo"}:
                return FORWARD
            offered = params["protocolVersion"]
            if (
                not isinstance(offered, str)
                or not _plain_capabilities(params["capabilities"])
                or not _plain_client(params["clientInfo"])
            ):
                return FORWARD
            reply = self._render(f"initialize|{offered}", request_id)
            if reply is None:
                return FORWARD
            self._offered = offered
            return Answer(reply, True, request_id)
        if method not in AFTER_INITIALIZE or params:
            return FORWARD
        reply = self._render(f"{method}|{self._offered}", request_id)
        return Answer(reply, False) if reply is not None else FORWARD

    def _render(self, key: str, request_id: int | str) -> bytes | None:
        recorded = self._cache.replies.get(key)
        if recorded is None:
            return None
        line = recorded.replace(json.dumps(PROBE_ID), json.dumps(request_id, ensure_ascii=False), 1)
        return line.encode("utf-8") + b"\n"


class _ProbeWire:
    """In-memory stdin and stdout for the SDK's stdio_server: each probe line is read only
    after the previous request was answered, so no request is cut short by the end of input."""

    def __init__(self, lines: list[str]) -> None:
        import anyio

        self._lines = lines
        self._new_event = anyio.Event
        self._wrote = anyio.Event()
        self.written: list[str] = []

    def __aiter__(self) -> AsyncIterator[str]:
        return self._read()

    async def _read(self) -> AsyncIterator[str]:
        for line in self._lines:
            before = len(self.written)
            yield line
            while '"id"' in line and len(self.written) == before:
                await self._wrote.wait()
                self._wrote = self._new_event()

    async def write(self, text: str) -> None:
        self.written.append(text)
        self._wrote.set()

    async def flush(self) -> None:
        return None


async def record(server: Any, print_: str) -> StdioHandshakeCache:
    """Ask `server` (a SymbioteMCP) every opening question through the SDK's stdio transport,
    one fresh session per protocol version, and keep its successful answers."""
    from mcp.server.stdio import stdio_server
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

    client = {"name": "symbiote-handshake", "version": __version__}
    replies: dict[str, str] = {}
    for offered in HANDSHAKE_PROTOCOL_VERSIONS:
        questions: list[tuple[str, dict[str, Any]]] = [
            (
                f"initialize|{offered}",
                {
                    "id": PROBE_ID,
                    "method": "initialize",
                    "params": {"protocolVersion": offered, "capabilities": {}, "clientInfo": client},
                },
            ),
            ("", {"method": INITIALIZED}),
            *((f"{method}|{offered}", {"id": PROBE_ID, "method": method, "params": {}}) for method in AFTER_INITIALIZE),
        ]
        lines = [json.dumps({"jsonrpc": "2.0", **message}) + "\n" for _key, message in questions]
        wire = _ProbeWire(lines)
        async with stdio_server(stdin=wire, stdout=wire) as (read_stream, write_stream):  # type: ignore[arg-type]
            await server.run_stdio_streams(read_stream, write_stream)
        answers = iter(wire.written)
        for key, message in questions:
            if "id" not in message:
                continue
            text = next(answers, "").rstrip("\n")
            try:
                parsed = json.loads(text)
            except ValueError:
                break
            if "result" not in parsed or text.count(json.dumps(PROBE_ID)) != 1:
                if message["method"] == "initialize":
                    break  # the SDK refused this version: nothing after it is the cache's
                continue
            replies[key] = text
    return StdioHandshakeCache(print_, replies)
