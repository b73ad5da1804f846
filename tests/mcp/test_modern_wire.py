"""The 2026-07-28 stateless wire as its clients use it: the SDK client pinned to that revision (and
to the legacy one) through the in-memory client over the real server object, and requests with
padded header values handed to the real app through an ASGI transport (httpx's own connection refuses
to send a padded value; Node's http, which the conformance suite in tests/e2e/test_conformance.py
uses, does not).
"""

from __future__ import annotations

import httpx
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import CLIENT_CAPABILITIES_META_KEY, HEADER_MISMATCH, INVALID_PARAMS, PROTOCOL_VERSION_META_KEY

from symbiote.config import Settings
from tests.conftest import InProcess, make_app

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


async def test_whitespace_around_a_routing_header_is_not_part_of_its_value(settings: Settings) -> None:
    """RFC 9110 §5.5. uvicorn's parser keeps trailing whitespace, so these reach the app padded; an ASGI
    transport hands the real app (its lifespan run, in this process) the values exactly as written."""
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
        "Content-Type": "application/json",
        "Accept": " application/json, text/event-stream",
        "MCP-Protocol-Version": f" {MODERN} ",
        "Mcp-Method": "\ttools/call\t",
        "Mcp-Name": "  memory_stats  ",
    }
    app = make_app(settings)
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as http:
            answered = await http.post("/mcp", json=body, headers=headers)
            mismatched = await http.post("/mcp", json=body, headers={**headers, "Mcp-Name": " memory_stat "})
    assert answered.request.headers["Mcp-Name"] == "  memory_stats  "  # sent padded
    assert answered.status_code == 200, answered.text
    assert answered.json()["result"]["structuredContent"]["total_memories"] >= 0
    assert mismatched.status_code == 400 and mismatched.json()["error"]["code"] == HEADER_MISMATCH  # still checked
