"""The 2026-07-28 stateless wire as its clients use it: the SDK client pinned to that revision (and
to the legacy one) through the in-memory client over the real server object, and requests written
byte by byte to a `symbiote serve` where the point is a header's exact bytes on HTTP (httpx refuses
to send a padded value; Node's http, which the conformance suite in tests/e2e/test_conformance.py
uses, does not).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import urlsplit

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import CLIENT_CAPABILITIES_META_KEY, HEADER_MISMATCH, INVALID_PARAMS, PROTOCOL_VERSION_META_KEY

from tests.conftest import InProcess, ServerProcess

MODERN = "2026-07-28"


@pytest.mark.parametrize("mode", [MODERN, "legacy"])
async def test_an_unknown_prompt_is_invalid_params_naming_it(
    in_process: InProcess, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with Client(in_process.server, mode=mode) as client:
        with pytest.raises(MCPError) as refused:
            await client.get_prompt("venom_identiti")
        assert (await client.get_prompt("venom_identity")).messages  # the session goes on
    assert refused.value.code == INVALID_PARAMS and "venom_identiti" in refused.value.message
    assert "modern request handler raised" not in caplog.text


@pytest.mark.parametrize("mode", [MODERN, "legacy"])
async def test_an_unexpected_prompt_argument_is_invalid_params_naming_it(in_process: InProcess, mode: str) -> None:
    """Issue 39: `{"x": "y"}` for venom_identity (which takes none) was code 0, "Error rendering prompt"."""
    async with Client(in_process.server, mode=mode) as client:
        with pytest.raises(MCPError) as refused:
            await client.get_prompt("venom_identity", {"x": "y"})
        assert (await client.get_prompt("venom_identity")).messages  # the session goes on
    assert refused.value.code == INVALID_PARAMS, (refused.value.code, refused.value.message)
    assert refused.value.message == "Invalid arguments for prompt venom_identity: unexpected x (it takes no arguments)."


async def raw_post(url: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    """One HTTP/1.1 POST with the header values exactly as given."""
    parts = urlsplit(url)
    payload = json.dumps(body).encode()
    lines = [
        f"POST {parts.path} HTTP/1.1",
        f"Host: {parts.netloc}",
        "Content-Type: application/json",
        f"Content-Length: {len(payload)}",
        "Connection: close",
        *(f"{k}:{v}" for k, v in headers.items()),
    ]
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    writer.write("\r\n".join(lines).encode() + b"\r\n\r\n" + payload)
    response = await reader.read()
    writer.close()
    head, _, content = response.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(content)


@pytest.mark.server("the transport is the point: a header's exact bytes on a real HTTP/1.1 socket")
async def test_whitespace_around_a_routing_header_is_not_part_of_its_value(chatgpt_server: ServerProcess) -> None:
    """RFC 9110 §5.5. uvicorn's parser keeps trailing whitespace, so these reach the app padded. (The
    package's shared server: the tool called is on every server.)"""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "memory_stats",
            "arguments": {},
            "_meta": {PROTOCOL_VERSION_META_KEY: MODERN, CLIENT_CAPABILITIES_META_KEY: {}},
        },
    }
    headers = {
        "Accept": " application/json, text/event-stream",
        "MCP-Protocol-Version": f" {MODERN} ",
        "Mcp-Method": "\ttools/call\t",
        "Mcp-Name": "  memory_stats  ",
    }
    status, answered = await raw_post(chatgpt_server.mcp_url, body, headers)
    assert status == 200, answered
    assert answered["result"]["structuredContent"]["total_memories"] >= 0
    status, mismatched = await raw_post(chatgpt_server.mcp_url, body, {**headers, "Mcp-Name": " memory_stat "})
    assert status == 400 and mismatched["error"]["code"] == HEADER_MISMATCH  # the value is still checked
