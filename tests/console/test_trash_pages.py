"""Deleting and undoing in the owner's console, in Debian's Chromium against a real `symbiote serve`
with auth on, checked through a real MCP client: the undo link, the trash, "all N matching", the
search kept through a delete and a Cancel, and no form to resubmit on Back."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import pytest_asyncio

from symbiote.config import Settings
from symbiote.memory import StoreRequest
from tests.auth.support import OWNER_SECRET, bearer_client, oauth_env
from tests.conftest import InProcess, ServerProcess, make_app, make_runtime
from tests.console.owner_browser import api_key_for, signed_in_page, start_server

PLANTS = [f"Plant diary {n}: the fig tree on the balcony got {n} litres of water." for n in range(30)]
OTHER = [
    "Prefers window seats on long flights.",
    "The car's next service is due in May at the Renault garage.",
    "Sister Ana lives in Porto and teaches the cello.",
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """This module's own server: its tests count what the whole store and its trash hold."""
    proc = start_server(tmp_path_factory.mktemp("trash-pages") / "data")
    yield proc
    proc.stop()


@pytest_asyncio.fixture(scope="module")
async def mcp_key(server: ServerProcess) -> str:
    return api_key_for(server)


@pytest_asyncio.fixture(scope="module")
async def stored(server: ServerProcess, mcp_key: str) -> dict[str, str]:
    async with bearer_client(server.mcp_url, mcp_key) as mcp:
        result = await mcp.call_tool(
            "store_memories", {"memories": [{"content": text, "tags": ["garden"]} for text in PLANTS]}
        )
        others = await mcp.call_tool("store_memories", {"memories": [{"content": text} for text in OTHER]})
    assert not result.is_error and not others.is_error
    pairs = zip(PLANTS + OTHER, result.structured_content["results"] + others.structured_content["results"])
    return {text: r["memory_id"] for text, r in pairs}


@pytest.mark.server("a browser drives the console: it needs the server's URL and real socket")
async def test_a_delete_from_a_search_keeps_the_search_and_can_be_undone(
    browser: Any, server: ServerProcess, stored: dict[str, str], mcp_key: str
) -> None:
    page = await signed_in_page(browser, server)
    search = f"{server.base_url}/console/?q=Porto+cello"
    await page.goto(search)
    target = stored[OTHER[2]]
    await page.get_by_label(f"Select: {OTHER[2]}").check()
    await page.click("text=Delete selected…")
    await page.wait_for_selector("#confirm-delete")
    assert "in the trash for 30 days" in await page.inner_text("main")
    await page.click("#cancel-delete")  # Cancel: back to the same search
    await page.wait_for_url(search)
    assert OTHER[2] in await page.inner_text("#results")

    await page.get_by_label(f"Select: {OTHER[2]}").check()
    await page.click("text=Delete selected…")
    await page.click("#confirm-delete")
    await page.wait_for_url("**/console/?q=Porto+cello&deleted=1&undo=*")
    assert await page.input_value("#q") == "Porto cello"  # the search survives the delete
    assert OTHER[2] not in await page.inner_text("#results")
    async with bearer_client(server.mcp_url, mcp_key) as mcp:
        found = await mcp.call_tool("search_memory", {"query": "where does Ana live"})
        assert target not in str(found.structured_content)

    response = await page.go_back()  # the confirmation again, got by GET: no resubmission
    assert response is not None and response.status == 200
    assert "None of the selected memories exists any more" in await page.inner_text("main")
    await page.go_forward()

    await page.click("#undo-delete")
    await page.wait_for_url("**/console/?q=Porto+cello&restored=1")
    assert "Restored 1 memory" in await page.inner_text("#results")
    assert OTHER[2] in await page.inner_text("#results")
    async with bearer_client(server.mcp_url, mcp_key) as mcp:
        back = await mcp.call_tool("get_memory", {"memory_id": target})
        assert not back.is_error and back.structured_content["content"] == OTHER[2]
    await page.context.close()


@pytest.mark.server("a browser drives the console: it needs the server's URL and real socket")
async def test_what_an_assistant_deleted_the_owner_restores_from_the_trash(
    browser: Any, server: ServerProcess, stored: dict[str, str], mcp_key: str
) -> None:
    target = stored[OTHER[1]]
    async with bearer_client(server.mcp_url, mcp_key) as mcp:
        deleted = await mcp.call_tool("delete_memory", {"memory_id": target})
        assert not deleted.is_error and deleted.structured_content["deleted"] is True
        gone = await mcp.call_tool("get_memory", {"memory_id": target})
        assert gone.is_error  # for assistants it is gone
    page = await signed_in_page(browser, server)
    await page.click("nav >> text=Trash")
    text = await page.inner_text("main")
    assert "stay here for 30 days" in text and OTHER[1] in text and "by an assistant" in text
    await page.get_by_label(f"Select: {OTHER[1]}").check()
    await page.click("#restore-selected")
    await page.wait_for_url("**/console/trash?restored=1")
    assert "The trash is empty." in await page.inner_text("main")
    async with bearer_client(server.mcp_url, mcp_key) as mcp:
        assert not (await mcp.call_tool("get_memory", {"memory_id": target})).is_error
    await page.context.close()


@pytest.mark.server("a browser drives the console: it needs the server's URL and real socket")
async def test_all_matching_across_pages_then_the_trash_emptied_with_a_confirmation(
    browser: Any, server: ServerProcess, stored: dict[str, str], mcp_key: str
) -> None:
    page = await signed_in_page(browser, server)
    await page.goto(f"{server.base_url}/console/?tag=garden")
    assert "30 memories · page 1 of 2" in await page.inner_text(".toolbar")
    await page.check("#all-matching")
    await page.click("text=Delete selected…")
    await page.wait_for_selector("#confirm-delete")
    assert "Delete 30 memories?" in await page.inner_text("h1")
    await page.click("#confirm-delete")
    await page.wait_for_url("**/console/?tag=garden&deleted=30&undo=*")
    assert "0 memories" in await page.inner_text(".toolbar")
    async with bearer_client(server.mcp_url, mcp_key) as mcp:
        listed = await mcp.call_tool("list_memories", {"limit": 50})
        assert listed.structured_content["count"] == len(OTHER)

    await page.goto(f"{server.base_url}/console/trash")
    assert "30 in the trash · page 1 of 2" in await page.inner_text(".toolbar")
    await page.click("#empty-trash")
    await page.wait_for_selector("#confirm-empty")
    assert "cannot be undone" in await page.inner_text("main")
    await page.click("#confirm-empty")
    await page.wait_for_url("**/console/trash?purged=30")
    assert "Deleted 30 memories for good" in await page.inner_text("main")
    assert "The trash is empty." in await page.inner_text("main")
    await page.context.close()


async def test_the_trash_s_writes_need_the_session_and_the_csrf_token(settings: Settings) -> None:
    # in this process, the console's routes over the real app with auth on (the owner's secret)
    env = {**oauth_env(), "CHROMADB_PATH": str(settings.chromadb_path)}
    configured = dataclasses.replace(Settings.from_env(env), model_dir=settings.model_dir, store_process=False)
    built = make_runtime(configured)
    app = make_app(configured, runtime=built)
    memory_id = (await built.engine.store(StoreRequest(OTHER[0]))).memory_id
    writes = [
        ("/console/trash/restore", {"ids": memory_id}),
        ("/console/trash/empty", {"confirm": "yes"}),
        ("/console/new", {"content": "Planted by a forged form"}),
        ("/console/delete", {"ids": memory_id, "confirm": "yes"}),
    ]
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1", timeout=30) as http:
        for path, data in writes:
            assert (await http.post(path, data=data)).status_code == 401  # no session
        assert (await http.post("/console/signin", data={"secret": OWNER_SECRET})).status_code == 303
        token = (await http.get("/console/")).text.split('name="csrf-token" content="')[1].split('"')[0]
        for path, data in writes:
            assert (await http.post(path, data=data)).status_code == 403, path  # no CSRF token
            crossed = await http.post(path, data={**data, "csrf": token}, headers={"Origin": "http://evil.example"})
            assert crossed.status_code == 403, path
        assert (await http.get(f"/console/memories/{memory_id}")).status_code == 200  # nothing was deleted
        assert "Planted by a forged form" not in (await http.get("/console/?q=Planted+forged+form")).text
    built.close()


async def _token(http: httpx.AsyncClient) -> str:
    return (await http.get("/console/")).text.split('name="csrf-token" content="')[1].split('"')[0]


async def test_a_delete_or_restore_of_nothing_or_of_a_bad_id_is_refused_in_words(in_process: InProcess) -> None:
    # in this process, the console's routes over the real app (loopback, auth off)
    kept = await in_process.engine.store(StoreRequest("The gate code is 4417"))
    async with in_process.http() as http:
        token = await _token(http)
        nothing = await http.get("/console/delete", params={"back": ""})
        assert nothing.status_code == 400 and "Select at least one memory to delete." in nothing.text
        bad = await http.get("/console/delete", params={"ids": "not-an-id"})
        assert bad.status_code == 400 and "not-an-id" in bad.text
        searched = await http.get("/console/delete", params={"all": "matching", "back": "q=gate"})
        assert searched.status_code == 400 and "not to a search" in searched.text
        confirmed = await http.post("/console/delete", data={"csrf": token, "confirm": "yes"})
        assert confirmed.status_code == 400 and "Select at least one memory" in confirmed.text
        forged = await http.post("/console/delete", data={"csrf": token, "confirm": "yes", "ids": "mem_x'"})
        assert forged.status_code == 400
        unconfirmed = await http.post("/console/delete", data={"csrf": token, "all": "matching", "back": "tag=x"})
        assert unconfirmed.status_code == 303 and unconfirmed.headers["location"].endswith("all=matching")
        bad_undo = await http.post("/console/trash/restore", data={"csrf": token, "undo": "12ab"})
        assert bad_undo.status_code == 400 and "not one the console made" in bad_undo.text
        gone = await http.post("/console/trash/restore", data={"csrf": token, "undo": "123"})  # no such deletion
        assert gone.status_code == 400 and "Nothing to restore" in gone.text
        stored = await http.post("/console/trash/restore", data={"csrf": token, "ids": kept.memory_id})
        assert stored.status_code == 303 and stored.headers["location"].endswith("/trash?restored=0")
        bad_restore = await http.post("/console/trash/restore", data={"csrf": token, "ids": "../etc"})
        assert bad_restore.status_code == 400
        empty = await http.post("/console/trash/empty", data={"csrf": token})  # not confirmed: asked first
        assert empty.status_code == 303 and empty.headers["location"].endswith("/trash/empty")
    assert (await in_process.engine.get(kept.memory_id)).content == "The gate code is 4417"


async def test_a_trash_page_past_the_last_shows_the_last(in_process: InProcess) -> None:
    stored = [await in_process.engine.store(StoreRequest(f"Old receipt {n} from the hardware shop")) for n in range(3)]
    await in_process.engine.trash.move([r.memory_id for r in stored], "owner")
    async with in_process.http() as http:
        page = await http.get("/console/trash", params={"page": "999"})
    assert page.status_code == 200 and "Old receipt 2 from the hardware shop" in page.text
