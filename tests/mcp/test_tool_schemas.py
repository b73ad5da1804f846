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
