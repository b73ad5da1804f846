"""The memory card in a real host: the test host page (the MCP TS client, ext-apps' AppBridge) against a
real `symbiote serve` in Debian's Chromium; what the owner does in the card is checked through the
test's own MCP client."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from playwright.async_api import expect

from tests.conftest import ServerProcess
from tests.e2e.card.conftest import Host, open_host, own_client

pytestmark = pytest.mark.server("a browser: the card in its host page calls a real server over MCP")

HOSTILE = '<img src=x onerror="window.__pwned=1">'


def unique(text: str) -> str:
    """`text` made unique to the test, so the package's shared store never holds it already."""
    return f"{text} (ref {uuid.uuid4().hex[:8]})"


@pytest_asyncio.fixture
async def host(browser: Any, card_server: ServerProcess, host_key: str, host_bundle: Path) -> AsyncIterator[Host]:
    """The host page, connected with the host's key; closed after the test."""
    opened = await open_host(browser, card_server, host_key, host_bundle)
    yield opened
    await opened.close()
    # No policy violation but the fetch test_a_hostile_memory_is_shown_as_text makes on purpose.
    violations = [e for e in opened.errors if "Content Security Policy" in e and "/health" not in e]
    assert not violations, opened.errors


async def get(mcp: Any, memory_id: str) -> dict[str, Any] | None:
    """The memory as the server has it now, or None when it is not among the memories."""
    found = await mcp.call_tool("get_memories", {"memory_ids": [memory_id]})
    assert not found.is_error, found.content
    return found.structured_content["memories"][0]


def memory_in(host: Host, memory_id: str) -> Any:
    return host.card.locator(f"article.memory[data-memory-id='{memory_id}']")


async def test_the_card_shows_a_stored_memory(host: Host) -> None:
    content = unique("Prefers green tea with mint in the evening")
    result = await host.show("store_memory", {"content": content, "tags": ["tea", "evening"]})
    stored = result["structuredContent"]
    assert stored["status"] == "stored"
    memory = memory_in(host, stored["memory_id"])
    assert await memory.locator(".content").text_content() == content  # from the call's input
    assert await memory.locator("ul.tags li").all_text_contents() == ["tea", "evening"]
    assert await host.card.locator("h1").text_content() == "Remembered"
    # The view the tool named: the app MIME type, no outside origin in its CSP.
    resource = await host.page.evaluate("() => testHost.resource")
    assert resource["uri"] == "ui://symbiote/memory-card.html"
    assert resource["mimeType"] == "text/html;profile=mcp-app"
    csp = (resource["meta"] or {}).get("ui", {}).get("csp", {})
    assert not any(csp.values()), csp


async def test_forget_undo_and_edit_change_the_store(host: Host, card_server: ServerProcess, client_key: str) -> None:
    content = unique("Parks the car on level 3 of the station garage")
    stored = (await host.show("store_memory", {"content": content, "tags": ["car"]}))["structuredContent"]
    memory_id = stored["memory_id"]
    memory = memory_in(host, memory_id)
    async with own_client(card_server, client_key) as mcp:
        await memory.get_by_role("button", name="Forget", exact=True).click()
        await memory.get_by_role("button", name="Undo forget").wait_for()
        assert await get(mcp, memory_id) is None
        await expect(host.card.locator("#status")).to_contain_text("Forgotten")

        await memory.get_by_role("button", name="Undo forget").click()
        await memory.get_by_role("button", name="Forget", exact=True).wait_for()
        back = await get(mcp, memory_id)
        assert back is not None and back["content"] == content

        edited = unique("Parks the car on level 4 of the station garage")
        await memory.get_by_role("button", name="Edit").click()
        await memory.get_by_label("Text").fill(edited)
        await memory.get_by_label("Tags").fill("car, parking")
        await memory.get_by_role("button", name="Save").click()
        await memory.locator(".content").filter(has_text=edited).wait_for()
        assert await memory.locator("ul.tags li").all_text_contents() == ["car", "parking"]
        now = await get(mcp, memory_id)
        assert now is not None and (now["content"], now["tags"]) == (edited, ["car", "parking"])


async def test_confirming_an_offered_update_puts_the_newer_fact_first(
    host: Host, card_server: ServerProcess, client_key: str
) -> None:
    question = {"query": "where do we live?", "limit": 3}
    async with own_client(card_server, client_key) as mcp:
        older = await mcp.call_tool("store_memory", {"content": "We live in Lisbon", "tags": ["home"]})
        older_id = older.structured_content["memory_id"]
        before = await mcp.call_tool("search_memory", question)
        assert before.structured_content["results"][0]["memory_id"] == older_id

        newer = (await host.show("store_memory", {"content": "We moved to Porto"}))["structuredContent"]
        assert [m["memory_id"] for m in newer.get("may_replace", [])] == [older_id], newer
        offer = host.card.locator("li.related").filter(has_text="We live in Lisbon")
        await offer.get_by_role("button", name="It replaces this").click()
        await offer.get_by_role("button", name="Undo link").wait_for()

        after = (await mcp.call_tool("search_memory", question)).structured_content
        assert after["results"][0]["memory_id"] == newer["memory_id"], after
        assert "Porto" in after["results"][0]["content"]

        await offer.get_by_role("button", name="Undo link").click()
        await offer.get_by_role("button", name="It replaces this").wait_for()
        assert (await get(mcp, newer["memory_id"]) or {}).get("supersedes") is None


async def test_a_store_shows_what_it_replaced_and_a_duplicate(
    host: Host, card_server: ServerProcess, client_key: str
) -> None:
    older_text = unique("The office wifi password is on the fridge")
    async with own_client(card_server, client_key) as mcp:
        older = (await mcp.call_tool("store_memory", {"content": older_text})).structured_content["memory_id"]
    newer_text = unique("The office wifi password is in the shared vault now")
    args = {"content": newer_text, "replaces": [older]}
    newer = (await host.show("store_memory", args))["structuredContent"]
    assert newer["replaced"] == [older]
    replaced = host.card.locator("section.related-list").filter(has_text="It replaced")
    await replaced.locator("li.related .content").filter(has_text=older_text).wait_for()  # fetched by get_memories

    again = (await host.show("store_memory", {"content": newer_text}))["structuredContent"]
    assert again["status"] == "duplicate" and again["memory_id"] == newer["memory_id"]
    assert await host.card.locator("h1").text_content() == "Already remembered"
    assert await memory_in(host, newer["memory_id"]).locator(".content").text_content() == newer_text


async def test_a_search_shows_what_the_assistant_was_given_and_takes_the_owner_s_marks(
    host: Host, card_server: ServerProcess, client_key: str
) -> None:
    tag = f"bikes-{uuid.uuid4().hex[:6]}"
    texts = [
        unique("The red road bike has a 52/36 crankset and 28 mm tyres"),
        unique("The bike shop on Rua Augusta services the road bike every spring"),
    ]
    async with own_client(card_server, client_key) as mcp:
        stored = await mcp.call_tool("store_memories", {"memories": [{"content": t, "tags": [tag]} for t in texts]})
        ids = [r["memory_id"] for r in stored.structured_content["results"]]
        found = (await host.show("search_memory", {"query": "the red road bike's tyres", "limit": 6}))[
            "structuredContent"
        ]
        assert await host.card.locator("h1").text_content() == "What the assistant was given"
        given = host.card.locator("section.group").first
        first = found["results"][0]
        hit = given.locator("article.memory").first
        assert await hit.get_attribute("data-memory-id") == first["memory_id"]
        marks = await hit.locator(".marks .mark").all_text_contents()
        assert f"Score {round(first['relevance_score'])}" in marks
        assert ("Answer" if first.get("match", "answer") == "answer" else "Context") in marks
        assert f"Matched by {first['matched_by']}" in marks
        if found.get("below_cutoff"):
            below = host.card.locator("section.group.below")
            assert await below.locator("h2").text_content() == "Under the cut-off"
            assert await below.locator("article.memory").count() == len(found["below_cutoff"])

        target = memory_in(host, ids[0])
        await target.get_by_role("button", name="Mark outdated").click()
        await target.get_by_role("button", name="Not outdated").wait_for()
        assert "outdated" in (await get(mcp, ids[0]) or {})["tags"]
        await target.get_by_role("button", name="Not outdated").click()
        await target.get_by_role("button", name="Mark outdated").wait_for()
        assert (await get(mcp, ids[0]) or {})["tags"] == [tag]

        await target.get_by_role("button", name="Wrong: forget").click()
        await target.get_by_role("button", name="Undo forget").wait_for()
        assert await get(mcp, ids[0]) is None
        await target.get_by_role("button", name="Undo forget").click()
        await target.get_by_role("button", name="Wrong: forget").wait_for()
        assert await get(mcp, ids[0]) is not None


async def test_a_list_and_a_batch_show_one_card_per_memory(host: Host) -> None:
    texts = [unique("Waters the balcony tomatoes every evening in July"), unique("Keeps spare keys with Ana")]
    batch = (await host.show("store_memories", {"memories": [{"content": t} for t in texts]}))["structuredContent"]
    cards = host.card.locator("article.memory")
    assert await cards.count() == 2
    assert await cards.locator(".memory-body .content").all_text_contents() == texts
    assert [await c.get_attribute("data-memory-id") for c in await cards.all()] == [
        r["memory_id"] for r in batch["results"]
    ]

    page = (await host.show("list_memories", {"limit": 5}))["structuredContent"]
    assert await host.card.locator("h1").text_content() == "Memories"
    assert await cards.count() == len(page["memories"])
    assert await host.card.locator(".mark.score").count() == 0  # a list has no scores


async def test_a_tool_error_is_shown_as_an_alert(host: Host) -> None:
    result = await host.show("store_memory", {"content": "   "})
    assert result["isError"], result
    message = "\n".join(block["text"] for block in result["content"] if block["type"] == "text")
    assert message
    assert await host.card.get_by_role("alert").text_content() == message


async def test_a_hostile_memory_is_shown_as_text(host: Host) -> None:
    content = unique(f"Notes {HOSTILE} end")
    stored = (await host.show("store_memory", {"content": content, "tags": [HOSTILE]}))["structuredContent"]
    memory = memory_in(host, stored["memory_id"])
    assert await memory.locator(".content").text_content() == content
    assert await memory.locator("ul.tags li").all_text_contents() == [HOSTILE]
    await host.show("search_memory", {"query": content, "limit": 3})
    await memory_in(host, stored["memory_id"]).locator(".content").filter(has_text=HOSTILE).first.wait_for()
    frame = host.frame()
    assert await frame.evaluate("() => document.querySelectorAll('img').length") == 0
    assert await frame.evaluate("() => window.__pwned") is None
    assert await host.page.evaluate("() => window.__pwned") is None
    # The view's own policy: no network, whatever a script in it tried.
    policy = await frame.evaluate("() => document.querySelector('meta[http-equiv=Content-Security-Policy]').content")
    assert "default-src 'none'" in policy and "connect-src 'none'" in policy and "img-src 'none'" in policy
    fetched = await frame.evaluate(
        "(url) => fetch(url).then(() => 'reached', () => 'blocked')", f"{host.page.url.split('/card')[0]}/health"
    )
    assert fetched == "blocked"


async def test_the_card_fits_a_phone_and_follows_the_host_theme(
    browser: Any, card_server: ServerProcess, host_key: str, host_bundle: Path
) -> None:
    phone = await open_host(browser, card_server, host_key, host_bundle, viewport={"width": 320, "height": 700})
    try:
        long_word = "Supercalifragilistic" * 8
        await phone.show("store_memory", {"content": unique(f"A long word {long_word}"), "tags": [long_word]})
        frame = phone.frame()
        assert await frame.evaluate("() => document.documentElement.scrollWidth <= innerWidth"), "it scrolls sideways"
        assert await frame.evaluate("() => document.documentElement.dataset.theme") == "light"
        await phone.page.evaluate("() => testHost.setTheme('dark')")
        await phone.card.locator("html[data-theme=dark]").wait_for(state="attached")
        background = await frame.evaluate("() => getComputedStyle(document.body).backgroundColor")
        assert background == "rgb(27, 29, 33)", background  # the card's own dark, without host variables
        await phone.show("list_memories", {"limit": 2}, styles={"--color-background-primary": "#fdf6e3"})
        background = await phone.frame().evaluate("() => getComputedStyle(document.body).backgroundColor")
        assert background == "rgb(253, 246, 227)", background  # the host's, when it gives one
    finally:
        await phone.close()


async def test_a_call_from_the_view_needs_the_token_a_model_s_call_needs(
    card_server: ServerProcess, client_key: str
) -> None:
    """The view's tools sit behind the same check as every tool: no token, or a wrong one, is refused
    before any tool runs; the caller's own key is let through."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "card_forget", "arguments": {"memory_id": "mem_00000000000000000001"}},
    }
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}
    async with httpx.AsyncClient(timeout=30) as http:
        for refused in ({}, {"Authorization": "Bearer sym_key_not-a-key"}):
            answer = await http.post(card_server.mcp_url, json=body, headers={**headers, **refused})
            assert answer.status_code == 401, answer.text
        for tool in ("card_forget", "delete_memory"):
            answer = await http.post(
                card_server.mcp_url,
                json={**body, "params": {**body["params"], "name": tool}},
                headers={**headers, "Authorization": f"Bearer {client_key}"},
            )
            # Let through to the tool, which answers the unknown id (or, for a caller never known to have
            # the extension, that the view's tool is not among its tools).
            assert answer.status_code == 200 and answer.json()["result"]["isError"] is True, answer.text
