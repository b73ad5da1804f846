"""Issue 20 on the memory side: bounded content and queries and dates out of range, through the
in-memory client over the real server object; against real servers, where the process is the point:
work that stops when its client leaves (the connection closed), and a reset that keeps the sign-ins
and is noticed by a server still running (another process).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import httpx
import pytest

from symbiote.auth import AUTH_DB_NAME
from tests.auth.support import MCP_HEADERS, bearer_client, oauth_env
from tests.conftest import InProcess, ServerProcess
from tests.hardening.test_servers import api_key, cli

# -- 6. content, queries and embedding work; 7. dates out of range (no authentication) -----------


async def call(target: ServerProcess | Any, tool: str, arguments: dict[str, Any]) -> tuple[bool, str]:
    """One tool call on a new session: to a server process, or to the real server object in this process."""
    from mcp import Client

    async with Client(target.mcp_url if isinstance(target, ServerProcess) else target) as client:
        result = await client.call_tool(tool, arguments)
    return result.is_error, " ".join(getattr(c, "text", "") for c in result.content)


async def test_content_and_queries_are_bounded_and_dates_never_crash(in_process: InProcess) -> None:
    server = in_process.server
    too_long, message = await call(server, "store_memory", {"content": "x" * 100_001})
    assert too_long and "100,000 bytes" in message and "SYMBIOTE_MAX_CONTENT_BYTES" in message, message
    multibyte, message = await call(server, "store_memory", {"content": "é" * 60_000})  # 120,000 bytes
    assert multibyte and "120,000 bytes" in message, message
    batch, message = await call(
        server, "store_memories", {"memories": [{"content": "fine"}, {"content": "y" * 100_001}]}
    )
    assert batch and "item 2" in message and "Nothing was stored" in message, message
    query, message = await call(server, "search_memory", {"query": " ".join(f"w{i}" for i in range(200_000))})
    assert query and "2,000" in message, message
    error, found = await call(
        server, "search_memory", {"query": "anything", "after": "0001-01-01", "before": "9999-12-31"}
    )
    assert not error, found
    for phrase in ("5000 years ago", "99999999999 days ago", "0001-01-01T00:00+01:00"):
        error, message = await call(server, "search_memory", {"query": "anything", "when": phrase})
        assert error and "outside the dates" in message and "Internal error" not in message, message


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.server("the transport is the point: a client that drops its connection mid-request")
async def test_embedding_stops_when_the_client_goes_away(server: ServerProcess) -> None:
    """A batch the client gives up on is not embedded on for nobody, nor stored."""
    assert server.proc is not None
    words = [f"{a}{b}{c}" for a in "bcdfg" for b in "aeiou" for c in "klmnprst"]
    items = [
        {"content": f"Abandoned batch item {i} " + " ".join(words[(i * 31 + j * 7) % len(words)] for j in range(150))}
        for i in range(100)
    ]  # 100 texts of one window each: seconds of embedding inside the request
    rpc = {
        "jsonrpc": "2.0",
        "id": 9,
        "method": "tools/call",
        "params": {"name": "store_memories", "arguments": {"memories": items}},
    }
    await call(server, "search_memory", {"query": "warm up the model"})  # what follows is the batch's work only
    async with httpx.AsyncClient(timeout=httpx.Timeout(30, read=1.0)) as http:
        with pytest.raises(httpx.ReadTimeout):
            await http.post(server.mcp_url, json=rpc, headers=MCP_HEADERS)
    await asyncio.sleep(2)  # the slice being embedded when the client left may finish
    before = cpu_seconds(server.proc.pid)
    await asyncio.sleep(3)
    assert cpu_seconds(server.proc.pid) - before < 0.5  # idle: nothing goes on embedding
    error, listed = await call(server, "list_memories", {"limit": 20})  # newest first
    assert not error and "Abandoned batch item" not in listed


# -- 9. reset keeps the sign-ins, and a running server notices ------------------------------------


@pytest.mark.server("the process is the point: `symbiote reset` beside a running server, then a restart")
async def test_reset_keeps_sign_ins_and_a_running_server_notices(tmp_path: Path, model_dir: Path) -> None:
    server = ServerProcess(tmp_path / "data", env=oauth_env()).start()
    try:
        key = api_key(server, "survives reset")
        async with bearer_client(server.mcp_url, key) as client:
            assert not (await client.call_tool("store_memory", {"content": "before the reset"})).is_error
        done = cli(server, "reset", "--confirm")
        assert done.returncode == 0 and "sign-in database" in done.stdout and "kept" in done.stdout, done.stdout
        async with bearer_client(server.mcp_url, key) as client:
            refused = await client.call_tool("store_memory", {"content": "after the reset"})
            listed = await client.call_tool("list_memories", {})
        for result in (refused, listed):
            text = " ".join(getattr(c, "text", "") for c in result.content)
            assert result.is_error and "reset" in text and "Restart" in text, text
    finally:
        server.stop()
    server = ServerProcess(tmp_path / "data", env=oauth_env(), port=server.port).start()
    try:
        async with bearer_client(server.mcp_url, key) as client:  # the key survived the reset
            stats = await client.call_tool("memory_stats", {})
        assert not stats.is_error and stats.structured_content["total_memories"] == 0
        moved = [p for p in tmp_path.iterdir() if p.name.startswith("data.reset-")]
        assert len(moved) == 1 and (moved[0] / "chroma.sqlite3").exists() and not (moved[0] / AUTH_DB_NAME).exists()
        again = cli(server, "reset", "--confirm", "--sign-ins")
        assert again.returncode == 0 and "API keys and connected apps must be set up again" in again.stdout
    finally:
        server.stop()
