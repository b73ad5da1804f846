"""Conversation history: append_history and get_history on both stores, and as MCP tools over HTTP."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from symbiote.errors import InvalidInputError
from symbiote.memory.history import ConversationHistory
from symbiote.memory.requests import SearchRequest
from symbiote.runtime import Runtime
from tests.conftest import InProcess, shared_model


def new_id() -> str:
    return f"conv-{uuid.uuid4().hex[:10]}"


async def test_turns_are_numbered_and_the_last_n_come_back_in_order(history: ConversationHistory) -> None:
    cid = new_id()
    said = [
        ("user", "Hi there"),
        ("assistant", "Hello! What are we working on?"),
        ("user", "The Lisbon trip"),
        ("assistant", "Flights first, then the hotel."),
        ("user", "Book the hotel near the river"),
    ]
    results = [await history.append(cid, role, text) for role, text in said]
    assert [r.turn_index for r in results] == [0, 1, 2, 3, 4]
    assert all(r.status == "appended" for r in results)
    last = await history.get(cid, 3)
    assert [(t.turn_index, t.role, t.text) for t in last.turns] == [
        (2, "user", "The Lisbon trip"),
        (3, "assistant", "Flights first, then the hotel."),
        (4, "user", "Book the hotel near the river"),
    ]
    assert last.count == 3 and last.total_turns == 5
    everything = await history.get(cid)  # default n=16
    assert [t.text for t in everything.turns] == [text for _, text in said]
    assert all(t.conversation_id == cid and t.ts.endswith("Z") for t in everything.turns)


async def test_unknown_conversation_is_an_empty_list(history: ConversationHistory) -> None:
    empty = await history.get(new_id(), 16)
    assert empty.turns == [] and empty.count == 0 and empty.total_turns == 0


async def test_conversations_do_not_mix(history: ConversationHistory) -> None:
    a, b = new_id(), new_id()
    await history.append(a, "user", "in A")
    await history.append(b, "user", "in B")
    await history.append(a, "assistant", "still A")
    assert [t.text for t in (await history.get(a)).turns] == ["in A", "still A"]
    assert [(t.turn_index, t.text) for t in (await history.get(b)).turns] == [(0, "in B")]


async def test_explicit_index_and_time_are_kept_and_order_follows_the_index(history: ConversationHistory) -> None:
    cid = new_id()
    await history.append(cid, "assistant", "second", turn_index=7, ts="2026-03-01T10:00:05+01:00")
    await history.append(cid, "user", "first", turn_index=3, ts="2026-03-01T09:00:00Z")
    after = await history.append(cid, "user", "third")
    assert after.turn_index == 8  # after the highest index, whatever order they came in
    turns = (await history.get(cid)).turns
    assert [(t.turn_index, t.text) for t in turns] == [(3, "first"), (7, "second"), (8, "third")]
    assert turns[0].ts == "2026-03-01T09:00:00.000000Z" and turns[1].ts == "2026-03-01T09:00:05.000000Z"


async def test_a_retried_turn_is_a_duplicate_and_a_different_one_is_refused(history: ConversationHistory) -> None:
    cid = new_id()
    await history.append(cid, "user", "Remind me to call Ana", turn_index=0)
    again = await history.append(cid, "user", "Remind me to call Ana", turn_index=0)
    assert again.status == "duplicate" and again.turn_index == 0
    with pytest.raises(InvalidInputError, match="already exists"):
        await history.append(cid, "user", "Something else entirely", turn_index=0)
    assert [t.text for t in (await history.get(cid)).turns] == ["Remind me to call Ana"]


async def test_concurrent_appends_get_distinct_indexes(history: ConversationHistory) -> None:
    cid = new_id()
    results = await asyncio.gather(*(history.append(cid, "user", f"message {i}") for i in range(12)))
    assert sorted(r.turn_index for r in results) == list(range(12))
    turns = (await history.get(cid, 50)).turns
    assert len(turns) == 12 and sorted(t.text for t in turns) == sorted(f"message {i}" for i in range(12))


async def test_history_writes_can_be_put_behind_the_share_write_gate(tmp_path: Path, model_dir: Path) -> None:
    """`history_services(guard=...)` with the file share's LeaseGuard: a snapshot holds appends back."""
    from symbiote.azure import LeaseGuard, WriteGate
    from symbiote.config import Settings
    from symbiote.embedding.embedder import AsyncEmbedder
    from symbiote.runtime import history_services

    settings = Settings(chromadb_path=tmp_path / "data", model_dir=model_dir)
    gate = WriteGate()
    embedder = AsyncEmbedder(shared_model)
    services = history_services(
        settings, embedder, engine=None, guard=lambda opener: LeaseGuard(opener, None, gate, settings.chromadb_path)
    )
    try:
        await services.history.append("gated", "user", "before the snapshot")
        with gate.quiesce():
            pending = asyncio.ensure_future(services.history.append("gated", "user", "during the snapshot"))
            await asyncio.sleep(0.5)
            assert not pending.done()  # waits for the snapshot to finish
            assert [t.text for t in (await services.history.get("gated")).turns] == [
                "before the snapshot"
            ]  # reads go on
        assert (await pending).turn_index == 1
    finally:
        services.history.close()
        embedder.close()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"conversation_id": "", "role": "user", "text": "x"}, "conversation_id is empty"),
        ({"conversation_id": "c" * 201, "role": "user", "text": "x"}, "at most 200"),
        ({"conversation_id": "c", "role": "robot", "text": "x"}, "role must be one of user, assistant, system"),
        ({"conversation_id": "c", "role": "user", "text": "   "}, "text is empty"),
        ({"conversation_id": "c", "role": "user", "text": "x", "turn_index": -1}, "turn_index must be"),
        ({"conversation_id": "c", "role": "user", "text": "x", "ts": "yesterday-ish"}, "ISO-8601"),
    ],
)
async def test_bad_appends_say_what_is_wrong(
    history: ConversationHistory, arguments: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidInputError, match=message):
        await history.append(**arguments)


async def test_bad_reads_say_what_is_wrong(history: ConversationHistory) -> None:
    for n in (0, 501, True):
        with pytest.raises(InvalidInputError, match="n must be a whole number from 1 to 500"):
            await history.get("c", n)


async def test_history_search_only_when_asked(backend_runtime: Runtime, history: ConversationHistory) -> None:
    cid = new_id()
    await history.append(cid, "user", "Our dog Biscuit hates thunderstorms")
    await history.append(cid, "assistant", "Poor Biscuit! A quiet room helps.")
    hits = await history.search("what scares the dog?", cid, 1)
    assert hits[0].text == "Our dog Biscuit hates thunderstorms" and hits[0].similarity > 0.3
    found = await backend_runtime.engine.search(SearchRequest("Biscuit hates thunderstorms", min_relevance=0))
    assert all("Biscuit" not in hit.content for hit in found.results)  # memory search never sees turns


# -- as MCP tools, through `symbiote serve` -------------------------------------------------------


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


async def test_history_tools_through_the_protocol(in_process: InProcess) -> None:
    cid = new_id()
    async with Client(in_process.server) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        first = await call(client, "append_history", conversation_id=cid, role="user", text="We are planning a trip")
        second = await call(client, "append_history", conversation_id=cid, role="assistant", text="Where to?")
        got = await call(client, "get_history", conversation_id=cid, n=16)
        unknown = await call(client, "get_history", conversation_id=new_id())
        bad = await client.call_tool("append_history", {"conversation_id": cid, "role": "robot", "text": "x"})
        memories = await call(client, "search_memory", query="We are planning a trip")
    assert {"append_history", "get_history", "build_context"} <= set(tools)
    schema = tools["append_history"].input_schema
    assert schema["required"] == ["conversation_id", "role", "text"]
    assert set(schema["properties"]) == {"conversation_id", "role", "text", "turn_index", "ts"}
    assert tools["get_history"].annotations.read_only_hint is True
    assert tools["append_history"].annotations.read_only_hint is False
    assert (first["turn_index"], second["turn_index"], first["status"]) == (0, 1, "appended")
    assert [(t["role"], t["text"]) for t in got["turns"]] == [
        ("user", "We are planning a trip"),
        ("assistant", "Where to?"),
    ]
    assert unknown["turns"] == [] and unknown["count"] == 0
    assert bad.is_error and "role" in bad.content[0].text and "Traceback" not in bad.content[0].text  # type: ignore[union-attr]
    assert all(hit["content"] != "We are planning a trip" for hit in memories["results"])
