"""One text rule at every door behind the wire (issue 58): whatever reaches the engine, from a tool
(stdio included: the same server object), the console or an import, is checked by
`symbiote.memory.validation` before anything is acknowledged or journalled. The real server object
behind the SDK's in-memory client, the real engine, Chroma and model."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client
from mcp_types import Implementation

from symbiote.errors import InvalidInputError
from symbiote.memory import MemoryEngine, validation
from symbiote.memory.requests import StoreRequest, UpdateRequest
from symbiote.runtime import Runtime

NOT_TEXT = "t\ud800"

TOOL_CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("store_memory", {"content": "bike \ud800"}, "content"),
    ("store_memory", {"content": "my bike is blue", "tags": [NOT_TEXT]}, "tag 1"),
    ("store_memory", {"content": "my bike is blue", "conversation_id": NOT_TEXT}, "conversation_id"),
    ("store_memories", {"memories": [{"content": "fine"}, {"content": "x", "tags": [NOT_TEXT]}]}, "item 2: tag 1"),
    ("search_memory", {"query": NOT_TEXT}, "query"),
    ("search_memory", {"query": "bike", "tags": [NOT_TEXT]}, "tag 1"),
    ("search_memory", {"query": "bike", "when": NOT_TEXT}, "when"),
    ("list_memories", {"before": NOT_TEXT}, "before"),
    ("append_history", {"conversation_id": "c1", "role": "user", "text": NOT_TEXT}, "text"),
    ("append_history", {"conversation_id": NOT_TEXT, "role": "user", "text": "hello"}, "conversation_id"),
    ("build_context", {"conversation_id": NOT_TEXT, "message": "hello"}, "conversation_id"),
    ("build_context", {"conversation_id": "c1", "message": NOT_TEXT}, "message"),
    ("get_history", {"conversation_id": NOT_TEXT}, "conversation_id"),
]


@pytest.mark.parametrize(("tool", "arguments", "field"), TOOL_CALLS)
async def test_every_tool_refuses_text_that_is_not_unicode_naming_the_field(
    runtime: Runtime, tool: str, arguments: dict[str, Any], field: str
) -> None:
    async with Client(runtime.server) as client:
        result = await client.call_tool(tool, arguments)
        stats = await client.call_tool("memory_stats", {})
    message = " ".join(getattr(part, "text", "") for part in result.content)
    assert result.is_error and f"{field} is not valid Unicode text" in message, message
    assert "Internal error" not in message and "disk" not in message
    assert stats.structured_content is not None and stats.structured_content["total_memories"] == 0


@pytest.mark.parametrize("tag", ["a\x00b", "\u202eevil", "tab\there", "a\x85b"])
async def test_tags_hold_no_control_or_bidirectional_character(engine: MemoryEngine, tag: str) -> None:
    with pytest.raises(InvalidInputError, match="tag 1 holds a control or formatting character"):
        await engine.store(StoreRequest(content="my bike is blue", tags=[tag]))
    with pytest.raises(InvalidInputError, match="conversation_id holds a control or formatting character"):
        await engine.store(StoreRequest(content="my bike is blue", conversation_id=f"c{tag}"))


async def test_an_update_and_the_console_s_edits_meet_the_same_rule(engine: MemoryEngine) -> None:
    stored = await engine.store(StoreRequest(content="my bike is blue", tags=["bikes"], client="console"))
    for change, field in (
        (UpdateRequest(stored.memory_id, content=NOT_TEXT), "content"),
        (UpdateRequest(stored.memory_id, tags=[NOT_TEXT]), "tag 1"),
    ):
        with pytest.raises(InvalidInputError, match=f"{field} is not valid Unicode text"):
            await engine.update(change)
    assert (await engine.get(stored.memory_id)).tags == ["bikes"]


async def test_a_client_name_that_is_not_text_is_recorded_printable_and_the_memory_stored(runtime: Runtime) -> None:
    async with Client(runtime.server, client_info=Implementation(name="curl\ud800\u202e", version="1")) as client:
        result = await client.call_tool("store_memory", {"content": "my bike is blue"})
    assert not result.is_error and result.structured_content is not None
    memory = await runtime.engine.get(result.structured_content["memory_id"])
    assert memory.content == "my bike is blue"
    stats = await runtime.engine.owner_stats()
    assert [s.name for s in stats.by_client] == ["curl\ufffd\ufffd"]


async def test_the_console_s_history_search_meets_the_same_rule(runtime: Runtime) -> None:
    assert runtime.history is not None
    with pytest.raises(InvalidInputError, match="query is not valid Unicode text"):
        await runtime.history.history.search(NOT_TEXT)


REFUSALS: list[tuple[Any, tuple[Any, ...], str]] = [
    (validation.query, (42,), "query must be text."),
    (validation.tags, (["t"] * 101,), "101 tags given; at most 10 are allowed."),
    (validation.tags, (["fine", 7],), "tag 2 is not text."),
    (validation.before, (1_700_000_000,), "before must be a memory id or an ISO-8601 date/time."),
    (validation.time_window, (None, None, 2024), "when must be text: an ISO date or a phrase like 'last week'."),
    (validation.flag, ("yes", "bookmarked"), "bookmarked must be true or false."),
    (validation.memory_ids, ([],), "memory_ids must be a non-empty list of ids."),
    (validation.memory_ids, (["mem_1"] * 101,), "101 ids given; at most 100 per call."),
    (validation.replaces, ("mem_17321234567890120042",), "replaces must be a list of memory ids"),
    (validation.replaces, (["mem_17321234567890120042"] * 11,), "replaces names 11 memories; at most 10."),
    (validation.batch, ({"content": "x"},), "memories must be a non-empty list of {content, tags?"),
    (validation.batch, ([{"content": "x"}] * 101,), "101 memories given; at most 100 per batch. Nothing was stored."),
    (validation.batch, (["fine", 3],), "item 2 must be an object with a content field. Nothing was stored."),
]


@pytest.mark.parametrize(("check", "arguments", "said"), REFUSALS)
def test_an_argument_of_the_wrong_kind_or_count_is_refused_naming_it(
    check: Any, arguments: tuple[Any, ...], said: str
) -> None:
    # what a client that skips the tools' schemas (or the console, or an import) may send
    with pytest.raises(InvalidInputError) as refused:
        check(*arguments)
    assert str(refused.value).startswith(said)
