"""The tools a client sees do not change when the code behind them does: `tools/list` over real HTTP,
compared with the snapshot in tool_schemas.json (taken before the engine's typed requests). A change
meant for users updates the snapshot on purpose: delete the file and run this test once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from tests.conftest import ServerProcess

SNAPSHOT = Path(__file__).with_name("tool_schemas.json")


def as_published(tools: list[Any]) -> str:
    listed = [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools]
    return json.dumps(listed, indent=2, ensure_ascii=False) + "\n"


async def test_tools_list_is_unchanged(chatgpt_server: ServerProcess) -> None:
    async with Client(chatgpt_server.mcp_url) as client:
        published = as_published((await client.list_tools()).tools)
    if not SNAPSHOT.exists():
        SNAPSHOT.write_text(published, encoding="utf-8")
        pytest.skip("snapshot written: commit tool_schemas.json")
    assert published == SNAPSHOT.read_text(encoding="utf-8")
