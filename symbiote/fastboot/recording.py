"""Recording the HTTP handshake: the running app asked every question a client opens with, in
process through the whole app (gateway, transport, SDK), and its successful answers kept as a
`HandshakeCache` (`symbiote.fastboot.handshake`) for the next start to replay."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from symbiote import __version__
from symbiote.fastboot.handshake import META_PREFIX, PROBE_ID, ASGIApp, HandshakeCache, Message, Reply, cache_key


def _probes() -> list[tuple[str, dict[str, str], dict[str, Any]]]:
    """(cache key, headers, message) for every request worth recording."""
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

    client = {"name": "symbiote-handshake", "version": __version__}
    # the answers do not depend on the client's capabilities (checked in tests/fastboot/test_handshake.py)
    probes: list[tuple[str, dict[str, str], dict[str, Any]]] = []
    for offered in HANDSHAKE_PROTOCOL_VERSIONS:
        params = {"protocolVersion": offered, "capabilities": {}, "clientInfo": client}
        probes.append((cache_key("initialize", "", offered), {}, {"method": "initialize", "params": params}))
    for version in ("", *HANDSHAKE_PROTOCOL_VERSIONS):
        headers = {"mcp-protocol-version": version} if version else {}
        probes.append(
            (cache_key("notifications/initialized", version), headers, {"method": "notifications/initialized"})
        )
        for method in ("ping", "prompts/list", "resources/list", "resources/templates/list"):
            probes.append((cache_key(method, version), headers, {"method": method, "params": {}}))
    for version in MODERN_PROTOCOL_VERSIONS:
        meta = {
            META_PREFIX + "protocolVersion": version,
            META_PREFIX + "clientInfo": client,
            META_PREFIX + "clientCapabilities": {},
        }
        for method in ("server/discover", "ping", "prompts/list", "resources/list", "resources/templates/list"):
            headers = {"mcp-protocol-version": version, "mcp-method": method}
            probes.append((cache_key(method, version), headers, {"method": method, "params": {"_meta": meta}}))
    return probes


async def record(app: ASGIApp, print_: str) -> HandshakeCache:
    """Ask the running app every handshake question and keep its successful answers."""
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    replies: dict[str, Reply] = {}
    for key, extra_headers, message in _probes():
        if not message["method"].startswith("notifications/"):
            message = {**message, "id": PROBE_ID}
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        headers = {
            "host": "127.0.0.1",
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            **extra_headers,
        }
        status, response_headers, response_body = await _call(app, headers, body)
        text = response_body.decode()
        if status >= 400 or (text and "result" not in json.loads(text)):
            continue  # the SDK refused this combination: leave it to the SDK at run time too
        if "id" in message and text.count(json.dumps(PROBE_ID)) != 1:
            continue
        kept = tuple((k, v) for k, v in response_headers if k not in ("content-length", "date", "server"))
        replies[key] = Reply(status, kept, text)
    return HandshakeCache(print_, replies, tuple(MODERN_PROTOCOL_VERSIONS))


async def _call(app: ASGIApp, headers: dict[str, str], body: bytes) -> tuple[int, list[tuple[str, str]], bytes]:
    """One in-process request through the whole ASGI app."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/mcp",
        "raw_path": b"/mcp",
        "root_path": "",
        "query_string": b"",
        "headers": [
            (k.encode("latin-1"), v.encode("latin-1")) for k, v in {**headers, "content-length": str(len(body))}.items()
        ],
        "client": ("127.0.0.1", 0),
        "server": ("127.0.0.1", 0),
        "state": {},
    }
    sent = False
    answered = asyncio.Event()
    status = 500
    response_headers: list[tuple[str, str]] = []
    chunks: list[bytes] = []

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await answered.wait()  # like a real client: connected until the answer is complete
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = int(message["status"])
            response_headers.extend(
                (k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in message.get("headers", ())
            )
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                answered.set()

    await app(scope, receive, send)
    return status, response_headers, b"".join(chunks)
