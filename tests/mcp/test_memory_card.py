"""The memory card (MCP Apps) as a host sees it through the SDK's client: what a host with the
extension is offered, what a host without it is not, and the card's own actions on the real store.
The view itself, in a browser, is tested in tests/e2e/card."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from mcp import Client
from mcp.client import advertise
from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID

from symbiote.mcp.memory_card import CARD_URI, OUTDATED, VIEW_ONLY, CardGate, card_html
from symbiote.memory import CARD, MAX_TAGS, SearchRequest, UpdateRequest
from symbiote.storage import content_hash
from tests.conftest import InProcess
from tests.http.test_envelope import serving
from tests.memory.held_writes import hold_first, metadata_change, text_change

APPS = [advertise(EXTENSION_ID, {"mimeTypes": [APP_MIME_TYPE]})]
SHOWN_BY_THE_CARD = {"store_memory", "store_memories", "search_memory", "list_memories"}


def apps_client(in_process: InProcess, mode: str = "auto") -> Client:
    return Client(in_process.server, mode=mode, extensions=APPS)  # type: ignore[arg-type]


async def test_a_host_with_the_extension_gets_the_view_its_tools_and_a_policy_with_no_outside_origin(
    in_process: InProcess,
) -> None:
    async with apps_client(in_process) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        resources = (await client.list_resources()).resources
        view = await client.read_resource(CARD_URI)
    named = {name for name, tool in tools.items() if (tool.meta or {}).get("ui", {}).get("resourceUri") == CARD_URI}
    assert named == SHOWN_BY_THE_CARD | set(VIEW_ONLY)
    for name in VIEW_ONLY:
        assert tools[name].meta["ui"]["visibility"] == ["app"], name  # the host keeps them from the model
    for name in SHOWN_BY_THE_CARD:
        assert "visibility" not in tools[name].meta["ui"], name  # the model's tools, as before
    listed = next(resource for resource in resources if str(resource.uri) == CARD_URI)
    assert listed.mime_type == APP_MIME_TYPE
    (content,) = view.contents
    assert content.mime_type == APP_MIME_TYPE and content.text == card_html()  # type: ignore[union-attr]
    csp = content.meta["ui"]["csp"]  # type: ignore[index]
    assert csp and all(domains == [] for domains in csp.values())


async def test_a_host_without_the_extension_sees_no_trace_of_the_card(in_process: InProcess) -> None:
    """What it lists is what it listed before the card (tests/mcp/test_tool_schemas.py holds the
    snapshot), in either protocol, and a view-only tool is as unknown to it as a misspelt one."""
    for mode in ("legacy", "auto"):
        async with Client(in_process.server, mode=mode) as client:
            tools = (await client.list_tools()).tools
            resources = (await client.list_resources()).resources
            refused = await client.call_tool("card_forget", {"memory_id": "mem_00000000000000000001"})
            stored = await client.call_tool("store_memory", {"content": "Our bike is blue."})
            capabilities = client.session.server_capabilities
        assert capabilities is None or not capabilities.extensions, mode  # the server does not offer it either
        assert not {tool.name for tool in tools} & set(VIEW_ONLY), mode
        assert all(tool.meta is None or "ui" not in tool.meta for tool in tools), mode
        assert all(not str(resource.uri).startswith("ui://") for resource in resources), mode
        assert refused.is_error and refused.content[0].text == "Unknown tool: card_forget"  # type: ignore[union-attr]
        assert not stored.is_error and stored.structured_content is not None


async def test_forget_undo_and_the_outdated_mark_change_the_store(in_process: InProcess) -> None:
    engine = in_process.engine
    async with apps_client(in_process) as client:
        stored = await client.call_tool(
            "store_memory", {"content": "We keep bees on the allotment.", "tags": ["garden"]}
        )
        memory_id = stored.structured_content["memory_id"]  # type: ignore[index]

        forgot = await client.call_tool("card_forget", {"memory_id": memory_id})
        assert forgot.structured_content["deleted"] is True  # type: ignore[index]
        found = await engine.search(SearchRequest("bees on the allotment"))
        assert memory_id not in {hit.memory_id for hit in found.results + found.below_cutoff}
        trashed, _total = (await engine.trash.page(0, 10)).items, None
        assert [item.deleted_by for item in trashed if item.memory.memory_id == memory_id] == [CARD]

        back = await client.call_tool("card_restore", {"memory_id": memory_id})
        assert back.structured_content["restored"] is True  # type: ignore[index]
        assert (await engine.get(memory_id)).content == "We keep bees on the allotment."
        again = await client.call_tool("card_restore", {"memory_id": memory_id})
        assert again.structured_content["restored"] is False  # type: ignore[index]
        assert "not in the trash" in again.structured_content["message"]  # type: ignore[index]

        marked = await client.call_tool("card_mark", {"memory_id": memory_id, "outdated": True})
        assert marked.structured_content["memory"]["tags"] == ["garden", OUTDATED]  # type: ignore[index]
        hit = (await client.call_tool("search_memory", {"query": "bees"})).structured_content
        assert OUTDATED in hit["results"][0]["tags"]  # type: ignore[index]  # what the assistant reads
        unmarked = await client.call_tool("card_mark", {"memory_id": memory_id, "outdated": False})
        assert unmarked.structured_content["memory"]["tags"] == ["garden"]  # type: ignore[index]

        gone = await client.call_tool("card_forget", {"memory_id": "mem_00000000000000000001"})
        assert gone.is_error and "mem_00000000000000000001" in gone.content[0].text  # type: ignore[union-attr]


def test_a_caller_s_declaration_is_remembered_until_it_is_pushed_out() -> None:
    gate = CardGate(limit=2)
    gate.remember("claude", True)
    gate.remember("code", False)
    assert dict(gate.declared) == {"claude": True, "code": False}
    gate.remember("third", True)
    assert list(gate.declared) == ["code", "third"]  # the least recent went


async def test_a_stateless_2025_host_is_known_by_what_its_initialize_declared(settings: Any) -> None:
    """A 2025-11-25 request over stateless HTTP carries no capabilities: the gate goes by the caller's
    last initialize (its authorization's client and its User-Agent)."""
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}

    def initialize(capabilities: dict[str, Any]) -> bytes:
        params = {
            "protocolVersion": "2025-11-25",
            "capabilities": capabilities,
            "clientInfo": {"name": "h", "version": "1"},
        }
        return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}).encode()

    listing = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).encode()
    legacy = {**headers, "MCP-Protocol-Version": "2025-11-25"}
    async with serving(settings) as (http, _engine):

        async def names() -> set[str]:
            answer = await http.post("/mcp", content=listing, headers=legacy)
            return {tool["name"] for tool in answer.json()["result"]["tools"]}

        assert not await names() & set(VIEW_ONLY)  # nothing known yet
        # ... and a view-only tool is refused to it (a restart, or a caller forgotten, is the same).
        forget = {"name": "card_forget", "arguments": {"memory_id": "mem_00000000000000000001"}}
        forgetting = json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": forget}).encode()
        refused = (await http.post("/mcp", content=forgetting, headers=legacy)).json()["result"]
        assert refused["isError"] and refused["content"][0]["text"].startswith("Unknown tool: card_forget. ")
        assert "connect again" in refused["content"][0]["text"]
        apps = {"extensions": {EXTENSION_ID: {"mimeTypes": [APP_MIME_TYPE]}}}
        await http.post("/mcp", content=initialize(apps), headers=headers)
        assert await names() >= set(VIEW_ONLY)
        let_in = (await http.post("/mcp", content=forgetting, headers=legacy)).json()["result"]
        assert let_in["isError"] and "mem_00000000000000000001" in let_in["content"][0]["text"]  # the tool's answer
        # Another host on the same machine (or the server's own handshake recording, which sends no
        # User-Agent) declaring nothing does not take the card from this one.
        other = {**headers, "User-Agent": "OtherHost/2"}
        plain = (await http.post("/mcp", content=initialize({}), headers=other)).json()["result"]
        assert "extensions" not in plain["capabilities"]  # as before the card
        assert await names() >= set(VIEW_ONLY)
        await http.post("/mcp", content=initialize({}), headers=headers)  # this host, now without it
        assert not await names() & set(VIEW_ONLY)


async def test_the_mark_and_its_undo_hold_on_ten_tags_and_on_any_spelling(in_process: InProcess) -> None:
    """The owner's mark is not one of the ten tags a memory may have, and "Outdated" is the mark too."""
    ten = [f"tag{i}" for i in range(MAX_TAGS)]
    async with apps_client(in_process) as client:
        full = await client.call_tool("store_memory", {"content": "The boiler was serviced in March.", "tags": ten})
        full_id = full.structured_content["memory_id"]  # type: ignore[index]
        marked = await client.call_tool("card_mark", {"memory_id": full_id, "outdated": True})
        assert not marked.is_error, marked.content
        assert marked.structured_content["memory"]["tags"] == [*ten, OUTDATED]  # type: ignore[index]
        again = await client.call_tool("update_memory", {"memory_id": full_id, "tags": [*ten, OUTDATED]})
        assert not again.is_error, again.content  # what the assistant read back, written back
        eleven = await client.call_tool("update_memory", {"memory_id": full_id, "tags": [*ten, "eleventh"]})
        assert eleven.is_error and f"at most {MAX_TAGS}" in eleven.content[0].text  # type: ignore[union-attr]
        unmarked = await client.call_tool("card_mark", {"memory_id": full_id, "outdated": False})
        assert unmarked.structured_content["memory"]["tags"] == ten  # type: ignore[index]

        spelt = await client.call_tool(
            "store_memory", {"content": "The old router password was on the fridge.", "tags": ["home", "Outdated"]}
        )
        spelt_id = spelt.structured_content["memory_id"]  # type: ignore[index]
        unmarked = await client.call_tool("card_mark", {"memory_id": spelt_id, "outdated": False})
        assert unmarked.structured_content["memory"]["tags"] == ["home"]  # type: ignore[index]
        marked = await client.call_tool("card_mark", {"memory_id": spelt_id, "outdated": True})
        assert marked.structured_content["memory"]["tags"] == ["home", OUTDATED]  # type: ignore[index]
        await in_process.engine.update(UpdateRequest(spelt_id, tags=["home", "OUTDATED"]))
        marked = await client.call_tool("card_mark", {"memory_id": spelt_id, "outdated": True})
        assert marked.structured_content["memory"]["tags"] == ["home", OUTDATED]  # type: ignore[index]


async def test_the_card_s_undo_restores_only_what_the_card_forgot(in_process: InProcess) -> None:
    async with apps_client(in_process) as client:
        stored = await client.call_tool("store_memory", {"content": "The spare key is under the blue pot."})
        memory_id = stored.structured_content["memory_id"]  # type: ignore[index]
        await client.call_tool("delete_memory", {"memory_id": memory_id})  # the assistant's delete
        refused = await client.call_tool("card_restore", {"memory_id": memory_id})
        assert refused.structured_content["restored"] is False  # type: ignore[index]
        assert "deleted by an assistant" in refused.structured_content["message"]  # type: ignore[index]
        assert [i.memory.memory_id for i in (await in_process.engine.trash.page(0, 10)).items] == [memory_id]
        for wrong in ("", "mem_1", "../etc/passwd"):
            bad = await client.call_tool("card_restore", {"memory_id": wrong})
            said = bad.content[0].text  # type: ignore[union-attr]
            assert bad.is_error and ("not a memory id" in said or "memory_id is empty" in said), said


@pytest.mark.parametrize("first", ["update", "mark"])
async def test_a_mark_and_an_update_at_once_are_both_kept(
    settings: Any, monkeypatch: pytest.MonkeyPatch, first: str
) -> None:
    """The first change is held at the store, at its write, until the second has been asked for: the
    second waits for it and is made to what it wrote (before, the mark was lost 20 times in 20)."""
    from tests.conftest import make_app, make_runtime

    text_first = first == "update"
    held = hold_first(monkeypatch, "replace", text_change if text_first else metadata_change)
    runtime = make_runtime(settings)
    in_process = InProcess(runtime, make_app(settings, runtime=runtime))
    longer = "The allotment is plot 14, by the east gate; the shed key is with Margaret. " * 40
    async with apps_client(in_process) as client, Client(in_process.server) as model:  # type: ignore[arg-type]
        stored = await model.call_tool("store_memory", {"content": "The allotment is plot 14.", "tags": ["garden"]})
        memory_id = stored.structured_content["memory_id"]  # type: ignore[index]
        update = model.call_tool("update_memory", {"memory_id": memory_id, "content": longer})
        mark = client.call_tool("card_mark", {"memory_id": memory_id, "outdated": True})
        one = asyncio.ensure_future(update if text_first else mark)
        assert await asyncio.to_thread(held.arrived.wait, 60)  # the first change is at its write, held
        two = asyncio.ensure_future(mark if text_first else update)
        held.release.set()
        answers = await asyncio.gather(one, two)
    assert not any(answer.is_error for answer in answers), [a.content for a in answers]
    memory = (await runtime.engine.bulk.fetch([memory_id]))[memory_id]
    assert (memory.content, memory.tags, memory.edits) == (longer.strip(), ("garden", OUTDATED), 2)
    assert memory.content_hash == content_hash(longer)
