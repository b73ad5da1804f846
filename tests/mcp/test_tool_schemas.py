"""The tools a client sees do not change when the code behind them does: `tools/list` through the SDK's
client, compared with the snapshot in tool_schemas.json (taken before the engine's typed requests). A
change meant for users updates the snapshot on purpose: delete the file and run this test once."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from symbiote.config import Settings
from tests.conftest import InProcess

SNAPSHOT = Path(__file__).with_name("tool_schemas.json")


def as_published(tools: list[Any]) -> str:
    listed = [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools]
    return json.dumps(listed, indent=2, ensure_ascii=False) + "\n"


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """The server with ChatGPT's `search` and `fetch` too: every tool it can publish (`in_process`)."""
    return dataclasses.replace(settings, chatgpt_tools="on")


async def test_tools_list_is_unchanged(in_process: InProcess) -> None:
    async with Client(in_process.server) as client:
        published = as_published((await client.list_tools()).tools)
    if not SNAPSHOT.exists():
        SNAPSHOT.write_text(published, encoding="utf-8")
        pytest.skip("snapshot written: commit tool_schemas.json")
    assert published == SNAPSHOT.read_text(encoding="utf-8")


async def test_every_tool_has_a_title_and_says_what_it_changes(in_process: InProcess) -> None:
    """The Claude and ChatGPT directories ask for a title and the read-only, destructive and
    open-world hints set on every tool; the server refuses to register a tool without them."""
    async with Client(in_process.server) as client:
        tools = (await client.list_tools()).tools
    assert {tool.name for tool in tools} >= {"search", "fetch", "store_memory", "delete_memory", "append_history"}
    for tool in tools:
        hints = tool.annotations
        assert tool.title and hints is not None, tool.name
        assert None not in (hints.read_only_hint, hints.destructive_hint, hints.open_world_hint), tool.name
        assert hints.open_world_hint is False, tool.name  # the owner's own memory, nothing beyond it
        assert not (hints.read_only_hint and hints.destructive_hint), tool.name
    destructive = {tool.name for tool in tools if tool.annotations and tool.annotations.destructive_hint}
    assert destructive == {"delete_memory", "update_memory"}  # what they remove or overwrite is gone


def test_a_tool_without_its_hints_is_refused_at_registration(in_process: InProcess) -> None:
    async def bare() -> str:
        return "x"

    with pytest.raises(ValueError, match="title and all four hints"):
        in_process.server.add_tool(bare, title="Bare")


# What a model reads of the tools (names, descriptions, input schemas as JSON), all 16 listed: 14,968
# characters at 47d6a5d, before the input schemas lost pydantic's titles; no change may make it larger.
MODEL_VIEW_BUDGET = 14_968


def model_view_size(tools: list[Any]) -> int:
    return sum(len(tool.name) + len(tool.description or "") + len(json.dumps(tool.input_schema)) for tool in tools)


def strict_problems(schema: Any, path: str = "") -> list[str]:
    """Why OpenAI's strict mode could not take `schema` as it is (the rules openai-agents' converter,
    `agents.strict_schema.ensure_strict_json_schema`, enforces before it falls back to a loose schema):
    an object that admits undeclared properties (`additionalProperties` true or a schema, or no
    properties declared and `additionalProperties: false` left out), an array without `items`, a
    `$ref` or a `type` list. The converter makes every property required; an optional argument is
    `anyOf [X, null]`, so a strict model passes null for it (tested below)."""
    if not isinstance(schema, dict):
        return [f"{path or 'root'}: not a schema object"]
    problems = []
    if "$ref" in schema:
        problems.append(f"{path}: $ref")
    if isinstance(schema.get("type"), list):
        problems.append(f"{path}: type list {schema['type']}")
    if schema.get("type") == "object" or "properties" in schema:
        closed = schema.get("additionalProperties")
        if closed not in (None, False) or (not schema.get("properties") and closed is not False):
            problems.append(f"{path}: open object")
        for name, sub in (schema.get("properties") or {}).items():
            problems += strict_problems(sub, f"{path}.{name}")
    if schema.get("type") == "array":
        if not isinstance(schema.get("items"), dict):
            problems.append(f"{path}: array without items")
        else:
            problems += strict_problems(schema["items"], f"{path}[]")
    for i, option in enumerate(schema.get("anyOf") or []):
        problems += strict_problems(option, f"{path}|{i}")
    return problems


def portability_warnings(schema: Any, path: str = "") -> list[str]:
    """What the MCP Inspector's `--strict` (2.12) warns of in a schema: a `type` list (write `anyOf`),
    a `$ref` outside the document, a schema that constrains nothing."""
    if not isinstance(schema, dict):
        return []
    found = []
    if isinstance(schema.get("type"), list):
        found.append(f"{path}: type list {schema['type']}")
    ref = schema.get("$ref")
    if isinstance(ref, str) and not ref.startswith("#"):
        found.append(f"{path}: remote $ref")
    if not set(schema) - {"title", "description", "default", "examples", "$comment"}:
        found.append(f"{path}: constrains nothing")
    for key in ("properties", "$defs"):
        for name, sub in (schema.get(key) or {}).items():
            found += portability_warnings(sub, f"{path}.{name}")
    for key in ("items", "additionalProperties", "not"):
        found += portability_warnings(schema.get(key), f"{path}.{key}")
    for key in ("anyOf", "oneOf", "allOf"):
        for i, sub in enumerate(schema.get(key) or []):
            found += portability_warnings(sub, f"{path}.{key}[{i}]")
    return found


async def test_every_tool_schema_is_strict_ready_portable_and_within_the_model_budget(in_process: InProcess) -> None:
    async with Client(in_process.server) as client:
        tools = (await client.list_tools()).tools
    root_problems = [t.name for t in tools if t.input_schema.get("type") != "object" or "anyOf" in t.input_schema]
    assert not root_problems
    assert {t.name: strict_problems(t.input_schema) for t in tools if strict_problems(t.input_schema)} == {}
    for tool in tools:
        found = portability_warnings(tool.input_schema) + portability_warnings(tool.output_schema or {})
        assert not found, (tool.name, found)
    assert model_view_size(tools) <= MODEL_VIEW_BUDGET


async def test_store_memories_takes_typed_items_as_a_strict_model_sends_them(in_process: InProcess) -> None:
    """Strict mode makes every field of an item required: a model sends null (or false) for those it
    leaves out. Such items are stored; a field the schema does not name is refused, naming the item."""
    async with Client(in_process.server) as client:
        items_schema = {t.name: t for t in (await client.list_tools()).tools}["store_memories"].input_schema
        item = items_schema["properties"]["memories"]["items"]
        assert item["additionalProperties"] is False and item["required"] == ["content"]
        every_field = dict.fromkeys(item["properties"])
        sent = [
            {**every_field, "content": "The allotment is plot 14", "bookmarked": False},
            {**every_field, "content": "Seeds come from the co-op", "tags": ["garden"], "bookmarked": True},
        ]
        stored = await client.call_tool("store_memories", {"memories": sent})
        assert not stored.is_error and stored.structured_content["stored"] == 2, stored
        refused = await client.call_tool("store_memories", {"memories": [{"content": "x", "colour": "red"}]})
        assert refused.is_error and "item 1 has unknown fields ['colour']" in refused.content[0].text
