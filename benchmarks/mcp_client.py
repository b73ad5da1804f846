"""Calling the server's tools with the MCP SDK client: a result's structured data, timed calls, and
waiting until stored memories' passages are indexed."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp import Client


def structured(result: Any) -> dict[str, Any]:
    """A tool result's structured data; raises RuntimeError when the tool answered with an error."""
    if getattr(result, "isError", False) or getattr(result, "is_error", False):
        texts = [getattr(c, "text", "") for c in (result.content or [])]
        raise RuntimeError("tool error: " + " ".join(texts))
    data = result.structured_content
    if data is None:
        data = json.loads(result.content[0].text)
    return data.get("result", data) if isinstance(data, dict) and set(data) == {"result"} else data


async def timed_calls(
    client: Client, tool: str, arguments: Callable[[int], dict[str, Any]], n: int, check: bool = True
) -> list[float]:
    """Call `tool` n times in a row with `arguments(i)`; the seconds each call took.

    With `check`, a tool error stops the run (its figures would time the error, not the work).
    """
    times: list[float] = []
    for i in range(n):
        args = arguments(i)
        started = time.perf_counter()
        result = await client.call_tool(tool, args)
        times.append(time.perf_counter() - started)
        if check:
            assert not result.is_error, result.content
    return times


async def passages_indexed(client: Client, poll: float = 0.25) -> float:
    """Wait until every stored memory's passages are indexed (they follow each store; `memory_stats`
    counts the memories still queued); the seconds it took."""
    began = time.perf_counter()
    while structured(await client.call_tool("memory_stats", {}))["collections"].get("passages_queued", 0):
        await asyncio.sleep(poll)
    return time.perf_counter() - began
