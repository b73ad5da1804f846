"""mcp-remote, the bridge desktop clients (Claude Desktop, Cursor, Windsurf) use for a remote server:
it registers itself (RFC 7591), opens the authorization URL with PKCE for the owner, who approves on
the consent page in a real browser (Debian's Chromium), takes the code at its own callback port, and
then relays stdio to the server. Over streamable HTTP and legacy SSE (`--transport sse-only`), each
with a sign-in of its own, then the whole session through the bridge (the SDK's stdio client)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import TextContent

from tests.auth.support import OWNER_SECRET
from tests.clients.conftest import FACTS, MCP_REMOTE, SETUP_HINT, MatrixServer, assert_session, node
from tests.conftest import free_port
from tests.console.owner_browser import launch

pytestmark = [
    pytest.mark.asyncio(loop_scope="session"),
    pytest.mark.server("mcp-remote is a client program that needs a URL; its sign-in runs in a browser"),
    pytest.mark.browser,
]

AUTHORIZE_LINE = re.compile(r"Please authorize this client by visiting:\s*(\S+)")


async def authorization_url(log: Path, deadline: float = 120) -> str:
    """The URL mcp-remote prints for the owner to open (its `open` of a browser goes nowhere here)."""
    with anyio.fail_after(deadline):
        while not (found := AUTHORIZE_LINE.search(log.read_text(errors="replace"))):
            await anyio.sleep(0.05)
    return found.group(1)


async def approve_in_browser(log: Path, callback_port: int) -> None:
    """Open the authorization URL in Chromium, type the owner secret, approve, and wait for the
    browser to reach mcp-remote's callback (which takes the code)."""
    from playwright.async_api import async_playwright

    url = await authorization_url(log)
    async with async_playwright() as playwright:
        browser = await launch(playwright)
        try:
            page = await browser.new_page()
            await page.goto(url)
            assert "/oauth/consent" in page.url, page.url
            await page.fill("#owner_secret", OWNER_SECRET)
            await page.click("button.approve")
            await page.wait_for_url(re.compile(rf"http://(localhost|127\.0\.0\.1):{callback_port}/oauth/callback\?"))
        finally:
            await browser.close()


def text_of(content: list[Any]) -> str:
    return "".join(part.text for part in content if isinstance(part, TextContent))


async def session_through_the_bridge(client: Client, fact: str, question: str) -> dict[str, Any]:
    """The scenario of tests/clients/drivers/scenario.py, through mcp-remote."""
    result: dict[str, Any] = {"tools": [tool.name for tool in (await client.list_tools()).tools]}
    stored = await client.call_tool("store_memory", {"content": fact})
    result["stored"] = None if stored.is_error else json.loads(text_of(stored.content))["memory_id"]
    result["store_error"] = text_of(stored.content) if stored.is_error else None
    found = await client.call_tool("search_memory", {"query": question})
    hits = [] if found.is_error else json.loads(text_of(found.content))["results"]
    result["found"] = [hit["memory_id"] for hit in hits]
    result["search_error"] = text_of(found.content) if found.is_error else None
    prompt = await client.get_prompt("venom_identity")
    result["prompt"] = "".join(m.content.text for m in prompt.messages if isinstance(m.content, TextContent))
    bad = await client.call_tool("search_memory", {"query": "anything", "limit": 99})
    result["bad_argument"] = {"is_error": bad.is_error, "text": text_of(bad.content)}
    return result


async def signed_in_session(url: str, fact: tuple[str, str], tmp_path: Path, *flags: str) -> tuple[dict[str, Any], str]:
    """mcp-remote to `url` with a token store of its own: the sign-in in the browser, then the
    session through it; also what it logged."""
    assert MCP_REMOTE.exists(), f"mcp-remote is missing: {SETUP_HINT}"
    port = free_port()
    log = tmp_path / "mcp-remote.log"
    env = {
        **os.environ,
        "MCP_REMOTE_CONFIG_DIR": str(tmp_path / "mcp-auth"),
        "BROWSER": "/bin/true",  # the `open` it calls for the owner does nothing; the test opens the URL
    }
    params = StdioServerParameters(command=node(), args=[str(MCP_REMOTE), url, str(port), *flags], env=env)
    with log.open("w") as errlog:
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(approve_in_browser, log, port)
                async with Client(
                    stdio_client(params, errlog=errlog), mode="legacy", read_timeout_seconds=120
                ) as client:
                    result = await session_through_the_bridge(client, *fact)
        except ExceptionGroup:  # the bridge's own words say why, not the SDK's "Connection closed"
            errors = [line for line in log.read_text(errors="replace").splitlines() if "rror" in line]
            pytest.fail(f"mcp-remote failed: {errors[-1] if errors else log.read_text()[-2000:]}", pytrace=False)
    return result, log.read_text(errors="replace")


async def test_mcp_remote_signs_in_and_works_over_streamable_http(matrix_server: MatrixServer, tmp_path: Path) -> None:
    result, log = await signed_in_session(matrix_server.mcp_url, FACTS["mcp-remote http"], tmp_path)
    assert_session(result)
    assert "Connected to remote server using StreamableHTTPClientTransport" in log, log[-2000:]


async def test_mcp_remote_signs_in_and_works_over_legacy_sse(matrix_server: MatrixServer, tmp_path: Path) -> None:
    result, log = await signed_in_session(
        matrix_server.sse_url, FACTS["mcp-remote sse"], tmp_path, "--transport", "sse-only"
    )
    assert_session(result)
    assert "Connected to remote server using SSEClientTransport" in log, log[-2000:]
