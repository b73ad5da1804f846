"""The tools a client sees do not change when the code behind them does: `tools/list` over real HTTP,
compared with the snapshot in tool_schemas.json (taken before the engine's typed requests). A change
meant for users updates the snapshot on purpose: delete the file and run this test once."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from tests.conftest import ServerProcess

SNAPSHOT = Path(__file__).with_name("tool_schemas.json")


@pytest.fixture(scope="module")
def every_tool_server(tmp_path_factory: pytest.TempPathFactory, model_dir: Path) -> Iterator[ServerProcess]:
    """A server with ChatGPT's tools too: every tool the server can publish."""
    proc = ServerProcess(tmp_path_factory.mktemp("schemas") / "data", env={"SYMBIOTE_CHATGPT_TOOLS": "on"}).start()
    yield proc
    proc.stop()


def as_published(tools: list[Any]) -> str:
    listed = [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools]
    return json.dumps(listed, indent=2, ensure_ascii=False) + "\n"


async def test_tools_list_is_unchanged(every_tool_server: ServerProcess) -> None:
    async with Client(every_tool_server.mcp_url) as client:
        published = as_published((await client.list_tools()).tools)
    if not SNAPSHOT.exists():
        SNAPSHOT.write_text(published, encoding="utf-8")
        pytest.skip("snapshot written: commit tool_schemas.json")
    assert published == SNAPSHOT.read_text(encoding="utf-8")
