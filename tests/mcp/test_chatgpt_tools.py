"""ChatGPT's `search` and `fetch`: the exact shapes deep research expects, as structured content and
as the same JSON in the text, with links that resolve on this server, over streamable HTTP to the real
app in this process (a link is built from the origin the request came to); their errors and which
servers publish them, through the in-memory client over the real server object."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from symbiote.config import Settings
from tests.conftest import InProcess, make_app, make_runtime

ORIGIN = "http://127.0.0.1"  # where the app in this process is reached


@pytest.fixture
def chatgpt(settings: Settings) -> Iterator[InProcess]:
    """The real server object with ChatGPT's tools on (SYMBIOTE_CHATGPT_TOOLS=on), in this process."""
    chosen = dataclasses.replace(settings, chatgpt_tools="on")
    built = make_runtime(chosen)
    yield InProcess(built, make_app(chosen, runtime=built))
    built.close()


async def structured_and_text(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert len(result.content) == 1 and result.content[0].type == "text"
    assert json.loads(result.content[0].text) == result.structured_content  # the same JSON, twice
    return result.structured_content


async def test_search_and_fetch_have_chatgpts_shapes(settings: Settings) -> None:
    """Over streamable HTTP to the real app (its lifespan run, in this process, through an ASGI
    transport): a link is built from the origin the request came to, and resolves there."""
    app = make_app(dataclasses.replace(settings, chatgpt_tools="on"))
    async with (
        app.router.lifespan_context(app),
        httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), timeout=30) as http,
        Client(streamable_http_client(f"{ORIGIN}/mcp", http_client=http)) as client,
    ):
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        stored = await client.call_tool(
            "store_memory",
            {"content": "Our daughter Maya starts violin lessons on Tuesdays at 4pm", "tags": ["family"]},
        )
        memory_id = stored.structured_content["memory_id"]
        found = await structured_and_text(client, "search", {"query": "when are Maya's music lessons?"})
        fetched = await structured_and_text(client, "fetch", {"id": memory_id})
        nothing = await structured_and_text(client, "search", {"query": "how do volcanoes form under the ocean floor"})
        link = await http.get(found["results"][0]["url"])
        unknown = await http.get(f"{ORIGIN}/memories/mem_00000000000000000001")
        foreign = await http.get(found["results"][0]["url"], headers={"Host": "evil.example"})
    for name in ("search", "fetch"):
        tool = tools[name]
        assert tool.annotations.read_only_hint is True and tool.description and tool.output_schema
    assert list(tools["search"].input_schema["properties"]) == ["query"]
    assert list(tools["fetch"].input_schema["properties"]) == ["id"]

    assert set(found) == {"results"} and found["results"]
    hit = found["results"][0]
    assert set(hit) == {"id", "title", "url"} and hit["id"] == memory_id
    assert hit["title"].startswith("Our daughter Maya")
    assert hit["url"] == f"{ORIGIN}/memories/{memory_id}"
    # A store of one memory: its only memory may come back for anything (as a chance, not an answer).
    assert set(nothing) == {"results"} and [h["id"] for h in nothing["results"]] in ([], [memory_id])

    assert set(fetched) == {"id", "title", "text", "url", "metadata"}
    assert (
        fetched["id"] == memory_id and fetched["text"] == "Our daughter Maya starts violin lessons on Tuesdays at 4pm"
    )
    assert fetched["url"] == hit["url"]
    assert fetched["metadata"]["tags"] == ["family"] and fetched["metadata"]["timestamp"].endswith("Z")

    assert link.status_code == 200 and link.json()["content"] == fetched["text"]
    assert unknown.status_code == 404 and foreign.status_code == 421


async def test_search_and_fetch_errors_read_like_sentences(chatgpt: InProcess) -> None:
    async with Client(chatgpt.server) as client:
        empty = await client.call_tool("search", {"query": "  "})
        missing = await client.call_tool("fetch", {"id": "mem_00000000000000000001"})
    assert empty.is_error and "query is empty" in empty.content[0].text
    assert missing.is_error and "Memory not found" in missing.content[0].text
    assert "Traceback" not in empty.content[0].text + missing.content[0].text


async def test_a_local_loopback_server_keeps_its_six_tools(in_process: InProcess) -> None:
    """Local clients (Claude Desktop/Code, VS Code) use search_memory; ChatGPT cannot reach loopback."""
    async with Client(in_process.server) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
    assert "search" not in names and "fetch" not in names
