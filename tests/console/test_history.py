"""The console's conversation history: search on the memories' 0-100 scale with the memory search's
cut-off, and deleting one conversation's turns after a confirmation, losing nothing else."""

from __future__ import annotations

from typing import Any

import pytest

from symbiote.memory import RELEVANCE_CUTOFF
from tests.auth.support import bearer_client
from tests.conftest import ServerProcess
from tests.console.conftest import DESKTOP, open_page

pytestmark = pytest.mark.server("a browser drives the console: it needs the server's URL and real socket")


async def test_history_search_scores_0_to_100_and_cuts_where_memory_search_does(
    browser: Any, owner_server: ServerProcess, stored: dict[str, str]
) -> None:
    page = await open_page(browser, owner_server, DESKTOP)
    await page.goto(f"{owner_server.base_url}/console/history?q=when+do+we+fly+to+Lisbon")
    scores = [int(text) for text in await page.locator("ol.turns .score").all_inner_texts()]
    assert scores and all(RELEVANCE_CUTOFF <= score <= 100 for score in scores), scores
    assert "Lisbon" in await page.locator("ol.turns li p").first.inner_text()
    assert "similarity" not in await page.inner_text("main")
    assert "garden" not in await page.inner_text("ol.turns")  # the balcony tomatoes score under the cut-off
    await page.goto(f"{owner_server.base_url}/console/history?q=quantum+chromodynamics+lattice+gauge")
    assert "none scored 30 or more" in await page.inner_text("ol.turns")
    await page.context.close()


async def test_deleting_a_conversations_history_asks_first_and_loses_nothing_else(
    browser: Any, owner_server: ServerProcess, stored: dict[str, str], api_key: str
) -> None:
    async with bearer_client(owner_server.mcp_url, api_key) as mcp:
        for role, text in [("user", "My bike is a green Brompton."), ("assistant", "A fine folding bike.")]:
            said = await mcp.call_tool("append_history", {"conversation_id": "bike-chat", "role": role, "text": text})
            assert not said.is_error
        kept = await mcp.call_tool(
            "store_memory",
            {"content": "Rides a green Brompton folding bike.", "conversation_id": "bike-chat", "confidence": 0.9},
        )
        assert not kept.is_error
    memory_id = kept.structured_content["memory_id"]
    page = await open_page(browser, owner_server, DESKTOP)
    await page.goto(f"{owner_server.base_url}/console/history?conversation=bike-chat")
    await page.click("form.delete-one button.danger")
    await page.wait_for_selector("#confirm-delete")
    text = await page.inner_text("main")
    assert "bike-chat" in text and "2 turns" in text and "Memories stored from it are kept" in text
    await page.click("text=Cancel")  # changing one's mind deletes nothing
    assert await page.locator("ol.turns li.turn").count() == 2
    await page.click("form.delete-one button.danger")
    await page.click("#confirm-delete")
    await page.wait_for_selector(".done")
    assert "Deleted the 2 turns of conversation bike-chat" in await page.inner_text(".done")
    assert "bike-chat" not in await page.inner_text("table.list")
    assert "garden" in await page.inner_text("table.list")  # the other conversations stay
    async with bearer_client(owner_server.mcp_url, api_key) as mcp:
        turns = await mcp.call_tool("get_history", {"conversation_id": "bike-chat"})
        assert turns.structured_content["total_turns"] == 0
        garden = await mcp.call_tool("get_history", {"conversation_id": "garden"})
        assert garden.structured_content["total_turns"] == 2
        memory = await mcp.call_tool("get_memory", {"memory_id": memory_id})
        assert not memory.is_error and "Brompton" in memory.structured_content["content"]
    await page.context.close()


async def test_a_delete_without_the_forms_token_is_refused(
    browser: Any, owner_server: ServerProcess, stored: dict[str, str]
) -> None:
    page = await open_page(browser, owner_server, DESKTOP)
    response = await page.request.post(
        f"{owner_server.base_url}/console/history/delete",
        form={"conversation": "garden", "confirm": "yes", "csrf": "not the token"},
    )
    assert response.status == 403
    await page.goto(f"{owner_server.base_url}/console/history?conversation=garden")
    assert await page.locator("ol.turns li.turn").count() == 2
    await page.context.close()
