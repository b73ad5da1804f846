"""Adding a memory by hand and editing its type, confidence and bookmark in the owner's console,
in Debian's Chromium against a real `symbiote serve` with auth on; what stored each memory (an MCP
client's declared name, or the console) is recorded and shown."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest
import pytest_asyncio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import Implementation

from tests.auth.support import bearer_client
from tests.conftest import ServerProcess
from tests.console.owner_browser import api_key_for, signed_in_page

pytestmark = pytest.mark.server("a browser drives the console: it needs the server's URL and real socket")


@pytest_asyncio.fixture(scope="module")
async def mcp_key(server: ServerProcess) -> str:
    return api_key_for(server)


async def test_the_owner_adds_a_memory_with_type_tags_confidence_and_bookmark(
    browser: Any, server: ServerProcess, mcp_key: str
) -> None:
    page = await signed_in_page(browser, server)
    await page.click("#add-memory")
    await page.wait_for_selector("h1:text('Add a memory')")
    await page.get_by_label("Text").fill("The boiler's annual check is booked for 3 March.")
    await page.get_by_label("Tags").fill("home, boiler")
    await page.get_by_label("Type").fill("fact")
    await page.get_by_label("Confidence").fill("2")  # out of range: refused, what was typed kept
    await page.get_by_label("Bookmark").check()
    await page.click("#new-memory button[type=submit]")
    assert "confidence must be a number from 0 to 1" in await page.inner_text(".error")
    assert await page.get_by_label("Text").input_value() == "The boiler's annual check is booked for 3 March."
    assert await page.get_by_label("Bookmark").is_checked()
    await page.get_by_label("Confidence").fill("0.9")
    await page.click("#new-memory button[type=submit]")
    await page.wait_for_url("**/console/memories/mem_*?saved=added")
    memory_id = page.url.split("/memories/")[1].split("?")[0]
    assert await page.inner_text("#stored-by") == "console"

    async with bearer_client(server.mcp_url, mcp_key) as mcp:
        got = (await mcp.call_tool("get_memory", {"memory_id": memory_id})).structured_content
        found = (await mcp.call_tool("search_memory", {"query": "when is the boiler checked?"})).structured_content
    assert (got["tags"], got["type"], got["confidence"], got["bookmarked"]) == (["home", "boiler"], "fact", 0.9, True)
    assert found["results"][0]["memory_id"] == memory_id

    await page.goto(f"{server.base_url}/console/new")  # the same text again: the existing memory
    await page.get_by_label("Text").fill("the boiler's  annual check is booked for 3 March.")
    await page.click("#new-memory button[type=submit]")
    await page.wait_for_url(f"**/console/memories/{memory_id}?saved=duplicate")
    assert "Already remembered" in await page.inner_text(".warning")
    await page.context.close()


async def test_the_owner_changes_type_confidence_and_bookmark_and_the_client_is_shown(
    browser: Any, server: ServerProcess, mcp_key: str
) -> None:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {mcp_key}"}, timeout=60)
    client = Client(
        streamable_http_client(server.mcp_url, http_client=http),
        client_info=Implementation(name="claude-ai", version="1.0"),
    )
    async with client as mcp:
        stored = await mcp.call_tool(
            "store_memory",
            {"content": "Thinks about switching to a standing desk.", "type": "project", "confidence": 0.4},
        )
    memory_id = stored.structured_content["memory_id"]
    legacy_http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {mcp_key}", "User-Agent": "Claude-User/1.0 (+https://example.org)"},
        timeout=60,
    )
    legacy = Client(streamable_http_client(server.mcp_url, http_client=legacy_http), mode="legacy")
    async with legacy as mcp:  # a stateless 2025 request carries no client name: its User-Agent's product
        plain = await mcp.call_tool("store_memory", {"content": "Waters the basil every second day."})
    page = await signed_in_page(browser, server)
    await page.goto(f"{server.base_url}/console/memories/{plain.structured_content['memory_id']}")
    assert await page.inner_text("#stored-by") == "Claude-User"
    await page.goto(f"{server.base_url}/console/memories/{memory_id}")
    assert await page.inner_text("#stored-by") == "claude-ai"
    assert await page.get_by_label("Type").input_value() == "project"
    await page.get_by_label("Type").fill("decision")
    await page.get_by_label("Confidence").fill("0,95")  # a decimal comma is read as a point
    await page.get_by_label("Bookmarked").check()
    await page.click("form.edit button[type=submit]")
    await page.wait_for_url("**saved=saved")  # the text did not change: nothing re-embedded
    async with bearer_client(server.mcp_url, mcp_key) as mcp:
        got = (await mcp.call_tool("get_memory", {"memory_id": memory_id})).structured_content
    assert (got["type"], got["confidence"], got["bookmarked"]) == ("decision", 0.95, True)
    assert got["updated_at"]

    await page.get_by_label("Bookmarked").uncheck()
    await page.click("form.edit button[type=submit]")
    await page.wait_for_url("**saved=saved")
    assert "Edits" in await page.inner_text("dl.facts") and await page.get_by_label("Bookmarked").is_checked() is False
    async with bearer_client(server.mcp_url, mcp_key) as mcp:
        got = (await mcp.call_tool("get_memory", {"memory_id": memory_id})).structured_content
    assert got.get("bookmarked", False) is False and got["type"] == "decision"
    await page.context.close()


async def test_no_mcp_client_passes_for_the_console(browser: Any, server: ServerProcess, mcp_key: str) -> None:
    """Issue 39: `User-Agent: console/1.0` on store_memory was counted as the owner's console. A
    declared name that reads as one of the server's own labels is stored marked as self-declared."""
    stored_by = {}
    for agent, name in (("console/1.0", None), (None, "Console"), (None, "ｉｍｐｏｒｔ")):
        http = httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {mcp_key}", **({"User-Agent": agent} if agent else {})}, timeout=60
        )
        transport = streamable_http_client(server.mcp_url, http_client=http)
        client = (
            Client(transport, mode="legacy")  # a stateless 2025 request: its User-Agent's product
            if name is None
            else Client(transport, client_info=Implementation(name=name, version="1.0"))
        )
        async with client as mcp:
            stored = await mcp.call_tool("store_memory", {"content": f"Posing as the console: {agent or name}."})
        stored_by[agent or name] = stored.structured_content["memory_id"]
    page = await signed_in_page(browser, server)
    shown = {}
    for label, memory_id in stored_by.items():
        await page.goto(f"{server.base_url}/console/memories/{memory_id}")
        shown[label] = await page.inner_text("#stored-by")
    assert shown == {
        "console/1.0": "console (self-declared)",
        "Console": "Console (self-declared)",
        "ｉｍｐｏｒｔ": "ｉｍｐｏｒｔ (self-declared)",
    }
    await page.context.close()
