"""The MCP handshake, answered from a cache while the MCP SDK is still loading.

Importing the MCP SDK takes most of a second here (pydantic builds three sets of protocol
models), yet what a client asks first - `initialize` or `server/discover`, `ping`, the prompts -
has the same answer every time for the same code and settings. So once the SDK has loaded, the
server asks *itself* those questions, through the whole app (gateway, transport, SDK), and keeps
the answers in `handshake-cache.json` in the data directory (and in the user's cache directory:
`symbiote.fastboot.cache_files`). On the next start,
`symbiote.fastboot.boot_app.BootApp` replays them while the SDK loads.

The cache never invents an answer: every entry is what the SDK said, byte for byte except the
JSON-RPC id. It answers only a plain request it recognises exactly (loopback Host, no Origin,
no credentials, no session, the JSON content types, a method and protocol version it recorded);
anything else waits for the SDK. The fingerprint covers our source files, the personalities,
the settings that shape the server and the installed SDK, so a change anywhere makes the cache
stale; it is then ignored and recorded again. Only used where no credentials are required
(`SYMBIOTE_AUTH` resolved to `none`): with OAuth, every request needs the token check.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import starlette.types

from symbiote import __version__
from symbiote.config import Settings
from symbiote.fastboot import cache_files

log = logging.getLogger(__name__)

CACHE_FILE = "handshake-cache.json"
FORMAT = 3
PROBE_ID = "symbiote-handshake-probe"
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "[::1]"})
MAX_BODY = 64 * 1024  # a handshake request is a few hundred bytes
# What clients send before their first real call. Recorded for every protocol version. Not
# `tools/list`: the SDK answers it once the tools can answer promptly (`symbiote.mcp.server`).
METHODS = (
    "initialize",
    "notifications/initialized",
    "server/discover",
    "ping",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
)
META_PREFIX = "io.modelcontextprotocol/"
META_KEYS = frozenset({META_PREFIX + "protocolVersion", META_PREFIX + "clientInfo", META_PREFIX + "clientCapabilities"})
# Packages whose version shapes the answers (schemas, field names, wire format).
SHAPING_PACKAGES = ("mcp", "mcp_types", "pydantic", "pydantic_core", "starlette")

# Starlette's own ASGI types (a module of type aliases: nothing heavy is imported with it).
ASGIApp = starlette.types.ASGIApp
Message = starlette.types.Message


@dataclasses.dataclass(frozen=True)
class Reply:
    """One recorded HTTP answer; `body` holds PROBE_ID where the request's id goes."""

    status: int
    headers: tuple[tuple[str, str], ...]
    body: str

    def render(self, request_id: int | str | None) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        body = self.body
        if request_id is not None:
            body = body.replace(json.dumps(PROBE_ID), json.dumps(request_id, ensure_ascii=False), 1)
        data = body.encode()
        headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in self.headers]
        headers.append((b"content-length", str(len(data)).encode()))
        return self.status, headers, data


def cache_path(settings: Settings) -> Path:
    return settings.chromadb_path / CACHE_FILE


def usable(settings: Settings) -> bool:
    """The cache serves open, streamable-HTTP servers on a loopback interface only (see above)."""
    from symbiote.platform_hosts import exposed

    public = exposed(settings.host, settings.platform_hosts, settings.behind_functions_host)
    # Not exposed, so the automatic auth mode is "none": only an explicit SYMBIOTE_AUTH changes it.
    return settings.transport == "http" and not public and (settings.auth_mode or "none") == "none"


def fingerprint(settings: Settings) -> str:
    """Everything that shapes the handshake's answers; any change makes a recorded cache stale."""
    digest = hashlib.sha256(f"format {FORMAT} symbiote {__version__}\n".encode())
    # The port, the log level and where the data lives change no answer (the cache sits in the
    # data directory, and one recorded by setup for `./data` serves Claude Desktop's absolute
    # path to it too); secrets are not in the repr.
    digest.update(repr(dataclasses.replace(settings, port=0, log_level="", chromadb_path=Path())).encode())
    package = Path(__file__).resolve().parent.parent  # all of symbiote/, not only this subpackage
    sources = sorted(package.rglob("*.py")) + sorted(settings.personalities_dir.glob("*.md"))
    for source in sources:
        digest.update(f"\n{source.name}\n".encode())
        digest.update(source.read_bytes())
    for name in SHAPING_PACKAGES:
        digest.update(f"\n{name}\n".encode())
        digest.update(_installed(name))
    return digest.hexdigest()


def _installed(name: str) -> bytes:
    """The package's installed-files record (every file's hash, and the version in the directory
    name), found without importing the package; its `__init__` file's size and time otherwise."""
    spec = importlib.util.find_spec(name)  # locates a top-level package without importing it
    if spec is None or not spec.origin:
        return b"absent"
    origin = Path(spec.origin)
    site = origin.parent.parent if origin.name == "__init__.py" else origin.parent
    for record in sorted(site.glob(f"{name}-*.dist-info/RECORD")):
        return f"{record.parent.name}\n".encode() + record.read_bytes()
    stat = origin.stat()
    return f"{origin} {stat.st_size} {stat.st_mtime_ns}".encode()


def cache_key(method: str, header_version: str, offered_version: str = "") -> str:
    return f"{method}|{header_version}|{offered_version}"


class HandshakeCache:
    """Recorded answers to the handshake, keyed by method and protocol version."""

    def __init__(
        self, print_: str, replies: Mapping[str, Reply], modern: tuple[str, ...] = (), max_body: int = MAX_BODY
    ) -> None:
        """`modern`: the protocol versions that use the per-request envelope (2026-07-28), as the
        SDK that recorded the cache knew them; `max_body`: the largest body read early."""
        self.fingerprint = print_
        self.replies = dict(replies)
        self.modern = frozenset(modern)
        self.max_body = max_body

    @classmethod
    def load(cls, settings: Settings, print_: str | None = None) -> HandshakeCache | None:
        """The recorded cache if it matches these settings and this code (`symbiote.fastboot.cache_files`
        says where it may be); None otherwise."""
        print_ = print_ or fingerprint(settings)
        raw = cache_files.read(settings, CACHE_FILE, FORMAT, print_)
        if raw is None:
            return None
        try:
            replies = {
                key: Reply(int(r["status"]), tuple((str(k), str(v)) for k, v in r["headers"]), str(r["body"]))
                for key, r in raw["replies"].items()
            }
            modern = tuple(str(version) for version in raw["modern"])
        except (ValueError, KeyError, TypeError, AttributeError):
            return None
        return cls(print_, replies, modern, min(MAX_BODY, settings.max_body_bytes))

    def save(self, settings: Settings) -> Path | None:
        """Write atomically to the data directory and the user's cache; where it went first
        (None: nowhere writable, which only means no cache)."""
        return cache_files.write(
            settings,
            CACHE_FILE,
            {
                "format": FORMAT,
                "fingerprint": self.fingerprint,
                "modern": sorted(self.modern),
                "replies": {
                    key: {"status": r.status, "headers": list(r.headers), "body": r.body}
                    for key, r in self.replies.items()
                },
            },
        )

    def answer(self, scope: Mapping[str, Any], body: bytes) -> tuple[int, list[tuple[bytes, bytes]], bytes] | None:
        """The recorded answer to this request, or None when it is not a plain handshake request."""
        found = _match(scope, body, self.modern)
        if found is None:
            return None
        key, request_id = found
        reply = self.replies.get(key)
        return reply.render(request_id) if reply is not None else None

    def wants_body(self, scope: Mapping[str, Any]) -> bool:
        """Whether this request could be a handshake request at all (checked before reading its body)."""
        if scope.get("type") != "http" or scope.get("method") != "POST" or scope.get("path") != "/mcp":
            return False
        length = _headers(scope).get("content-length", "")
        return length.isascii() and length.isdigit() and int(length) <= self.max_body


def _headers(scope: Mapping[str, Any]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for name, value in scope.get("headers", ()):
        key = name.decode("latin-1").lower()
        if key in headers:  # a repeated header: leave such requests to the SDK
            headers[key] = "\0repeated"
        else:
            headers[key] = value.decode("latin-1")
    return headers


def _match(scope: Mapping[str, Any], body: bytes, modern: frozenset[str]) -> tuple[str, int | str | None] | None:
    """(cache key, JSON-RPC id) of a plain handshake request; None for anything else.

    Stricter than the SDK everywhere: whatever the SDK might refuse or answer differently
    goes to the SDK.
    """
    headers = _headers(scope)
    if any(name in headers for name in ("origin", "authorization", "mcp-session-id", "cookie", "last-event-id")):
        return None
    host = headers.get("host", "")
    name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
    if name not in LOOPBACK_NAMES:
        return None
    if headers.get("content-type", "").split(";")[0].strip() != "application/json":
        return None
    accepted = {part.split(";")[0].strip().lower() for part in headers.get("accept", "").split(",")}
    if not {"application/json", "text/event-stream"} <= accepted:
        return None
    message = _strict_json(body)
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return None
    method = message.get("method")
    if method not in METHODS or set(message) - {"jsonrpc", "id", "method", "params"}:
        return None
    notification = method.startswith("notifications/")
    request_id = message.get("id")
    if notification != ("id" not in message):
        return None
    if not notification and (isinstance(request_id, bool) or not isinstance(request_id, (int, str))):
        return None
    header_version = headers.get("mcp-protocol-version", "")
    params = message.get("params", {})
    if not isinstance(params, dict):
        return None
    if header_version in modern:  # the per-request envelope: the SDK checks header, method and _meta
        if (
            headers.get("mcp-method") != method
            or set(params) != {"_meta"}
            or not _modern_meta(params["_meta"], header_version)
        ):
            return None
        return cache_key(method, header_version), request_id
    if "mcp-method" in headers or "_meta" in params:
        return None
    offered = ""
    if method == "initialize":
        if set(params) != {"protocolVersion", "capabilities", "clientInfo"}:
            return None
        offered = params["protocolVersion"]
        if (
            not isinstance(offered, str)
            or not _plain_capabilities(params["capabilities"])
            or not _plain_client(params["clientInfo"])
        ):
            return None
    elif params:
        return None
    return cache_key(method, header_version, offered), request_id


def _strict_json(body: bytes) -> Any:
    """The body as JSON if it is plain UTF-8 JSON the SDK reads the same way; None otherwise."""
    try:
        text = body.decode("utf-8")
        if text.startswith("\ufeff"):
            return None
        message = json.loads(text)
        json.dumps(message, ensure_ascii=False).encode("utf-8")  # lone surrogates ("\\ud800") fail here
    except (UnicodeError, ValueError, RecursionError):
        return None
    return message


def _modern_meta(meta: object, header_version: str) -> bool:
    return (
        isinstance(meta, dict)
        and set(meta) == META_KEYS
        and meta[META_PREFIX + "protocolVersion"] == header_version
        and _plain_client(meta[META_PREFIX + "clientInfo"])
        and _plain_capabilities(meta[META_PREFIX + "clientCapabilities"])
    )


CLIENT_INFO_KEYS = frozenset({"name", "version", "title", "description", "websiteUrl"})
# Client capabilities the cache accepts, with the flags each may carry (all booleans); anything
# else (experimental, sampling.context, elicitation modes, tasks...) goes to the SDK's validation.
PLAIN_CAPABILITIES: Mapping[str, frozenset[str]] = {
    "roots": frozenset({"listChanged"}),
    "sampling": frozenset(),
    "elicitation": frozenset(),
}


def _plain_client(client: object) -> bool:
    """A clientInfo the SDK accepts for sure: known string fields only, name and version given."""
    return (
        isinstance(client, dict)
        and {"name", "version"} <= set(client) <= CLIENT_INFO_KEYS
        and all(isinstance(value, str) for value in client.values())
    )


def _plain_capabilities(capabilities: object) -> bool:
    """Capabilities the SDK accepts for sure (see PLAIN_CAPABILITIES)."""
    if not isinstance(capabilities, dict):
        return False
    for name, flags in capabilities.items():
        allowed = PLAIN_CAPABILITIES.get(name)
        if allowed is None or not isinstance(flags, dict) or not set(flags) <= allowed:
            return False
        if not all(isinstance(value, bool) for value in flags.values()):
            return False
    return True
