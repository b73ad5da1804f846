"""The assistant confirms what the server is not sure of, over MCP with a real server: a scripted
client that searches first and stores each new value with `replaces` naming the true older memory
(and only it) gets the newer value first for every update of the held-out half; offers confirmed
with link_memories; who made each link, in the console and the export; bad ids named."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from tests.conftest import InProcess

UPDATES_SET = Path(__file__).resolve().parents[2] / "eval" / "updates_set.json"
# "where do I work?" scores both the chef's old and new restaurant under the default cut-off (28.8
# and 28.7 of 100; the day off "at the new job" answers instead): a retrieval miss, not a link's.
# With the cut-off at 0 the newer comes first there too.
UNDER_THE_CUT_OFF = {("h07", "h07_rest", "h07_rest2", "where do I work?")}
MISSING = "mem_17000000000000000000"


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result
    assert result.structured_content is not None
    return result.structured_content


async def error(client: Client, tool: str, **arguments: Any) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error, result
    return str(result.content[0].text)  # type: ignore[union-attr]


@pytest.mark.slow
async def test_a_scripted_assistant_confirming_the_true_older_memory_gets_the_newer_first(
    in_process: InProcess,
) -> None:
    owners = [o for o in json.loads(UPDATES_SET.read_text())["owners"] if o["half"] == "held"]
    missed = []
    async with Client(in_process.server) as client:
        for owner in owners:
            older_of = {case["new"]: case["old"] for case in owner["updates"]}
            ids: dict[str, str] = {}
            for memory in owner["memories"]:
                arguments: dict[str, Any] = {"content": memory["text"]}
                if memory["id"] in older_of:  # search first, as the protocol asks; the script knows the answer
                    await call(client, "search_memory", query=memory["text"])
                    arguments["replaces"] = [ids[older_of[memory["id"]]]]
                stored = await call(client, "store_memory", **arguments)
                ids[memory["id"]] = stored["memory_id"]
            for case in owner["updates"]:
                new, old = ids[case["new"]], ids[case["old"]]
                assert (await call(client, "get_memory", memory_id=old)).get("superseded_by") == new
                for cut_off in (30, 0):  # the default, and everything stored
                    found = await call(client, "search_memory", query=case["query"], min_relevance=cut_off)
                    order = [r["memory_id"] for r in found["results"]]
                    assert old not in order or order.index(new) < order.index(old), case  # never the older first
                    if new not in order:
                        missed.append((owner["owner"], case["old"], case["new"], case["query"], cut_off))
            for memory_id in ids.values():  # the next owner starts from an empty store
                await call(client, "delete_memory", memory_id=memory_id)
        async with in_process.http() as http:
            assert ">Undo<" not in (await http.get("/console/links")).text  # deleted memories take their links
    assert sum(len(o["updates"]) for o in owners) == 30
    assert {miss[:4] for miss in missed} <= UNDER_THE_CUT_OFF and all(miss[4] == 30 for miss in missed), missed


async def test_offers_confirmed_and_who_linked_each(in_process: InProcess) -> None:
    async with Client(in_process.server) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        for name in ("link_memories", "unlink_memories"):
            hints = tools[name].annotations
            assert hints is not None and hints.read_only_hint is False and hints.destructive_hint is False
        assert "replaces" in tools["store_memory"].input_schema["properties"]
        assert "replaces" not in tools["store_memory"].input_schema.get("required", [])
        assert "replaces" in (client.instructions or "") and "may_replace" in (client.instructions or "")
        prompt = await client.get_prompt("venom_identity")
        assert "may_replace" in prompt.messages[0].content.text  # type: ignore[union-attr]

        phone = (await call(client, "store_memory", content="Uses an old Samsung Galaxy S8."))["memory_id"]
        await call(client, "store_memory", content="Does yoga on Wednesday evenings.")
        iphone = await call(
            client, "store_memory", content="Got a new phone, an iPhone 13, from my son for my birthday."
        )
        assert iphone.get("linked") is None and [m["memory_id"] for m in iphone.get("may_replace")] == [phone]
        assert "link_memories" in iphone["message"]
        linked = await call(client, "link_memories", newer_id=iphone["memory_id"], older_id=phone, kind="update")
        assert linked.get("linked") and linked["by"] == "assistant"
        found = await call(client, "search_memory", query="what phone do I have?")
        order = [r["memory_id"] for r in found["results"]]
        assert order.index(iphone["memory_id"]) < order.index(phone)

        assert MISSING in await error(client, "link_memories", newer_id=iphone["memory_id"], older_id=MISSING)
        assert MISSING in await error(client, "store_memory", content="Lives in Porto now.", replaces=[MISSING])
        assert "cycle" in await error(client, "link_memories", newer_id=phone, older_id=iphone["memory_id"])
        assert "itself" in await error(client, "link_memories", newer_id=phone, older_id=phone)

        city = (await call(client, "store_memory", content="I live in Koramangala, near the lake."))["memory_id"]
        moved = (await call(client, "store_memory", content="Bought a flat in Whitefield; moving in May."))["memory_id"]
        async with in_process.http() as http:
            page = (await http.get(f"/console/memories/{moved}")).text
            token = page.split('name="csrf-token" content="')[1].split('"')[0]
            forged = await http.post(f"/console/memories/{moved}/link", data={"older_id": city, "kind": "update"})
            assert forged.status_code == 403  # no CSRF token: nothing linked
            assert (await call(client, "get_memory", memory_id=city)).get("superseded_by") is None
            made = await http.post(
                f"/console/memories/{moved}/link", data={"csrf": token, "older_id": city, "kind": "update"}
            )
            assert made.status_code == 303 and made.headers["location"].endswith("/links?done=link")
            assert (await call(client, "get_memory", memory_id=city)).get("superseded_by") == moved
            listing = (await http.get("/console/links")).text
            assert "linked by an assistant" in listing and "linked by you" in listing
            exported = (await http.get("/console/export")).text.splitlines()
            by = {line["id"]: line["links"]["by"] for line in map(json.loads, exported[1:]) if "links" in line}
            assert by[phone] == "assistant" and by[city] == "owner"
            undone = await http.post(f"/console/links/{phone}/undo", data={"csrf": token})  # the owner undoes any
            assert undone.status_code == 303
        assert (await call(client, "get_memory", memory_id=phone)).get("superseded_by") is None
        unlinked = await call(client, "unlink_memories", newer_id=moved, older_id=city)
        assert unlinked.get("linked") is False and unlinked["by"] == "owner"
