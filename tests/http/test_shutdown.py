"""Shutdown during concurrent writes: every acknowledged write survives a restart.

A real `symbiote serve` process takes writes from several clients (streamable HTTP and legacy
SSE) at once. A write counts as acknowledged when its store_memory answer reached the client.
After a graceful SIGTERM (the process must exit 0) or a `kill -9`, the server is started again
on the same directory: the store must open cleanly and every acknowledged memory must be there.
benchmarks/load.py runs the kill -9 part many more times.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client
from mcp.client.sse import sse_client

from tests.conftest import ServerProcess

CALL_TIMEOUT = 30.0


async def write_until_gone(url: str, label: str, acked: dict[str, str], stop: asyncio.Event, legacy: bool) -> None:
    """Store distinct memories until the server goes away (or `stop`); record each acknowledged one."""
    client = Client(sse_client(url + "/sse"), mode="legacy") if legacy else Client(url + "/mcp")
    with contextlib.suppress(Exception):  # the server vanishing mid-call is the point of the test
        async with client:
            for n in range(5_000):
                if stop.is_set():
                    return
                content = f"Shutdown test {label} note {n}: the user prefers window seat {n % 40} on trains."
                result = await asyncio.wait_for(client.call_tool("store_memory", {"content": content}), CALL_TIMEOUT)
                answer: dict[str, Any] = result.structured_content or {}
                if result.is_error or answer.get("status") not in ("stored", "duplicate"):
                    return
                acked[answer["memory_id"]] = content


def start_writers(url: str, round_label: str, acked: dict[str, str], stop: asyncio.Event) -> list[asyncio.Task[None]]:
    kinds = [False, False, False, False, True]  # four streamable-HTTP clients, one legacy SSE
    return [
        asyncio.create_task(write_until_gone(url, f"{round_label}w{i}", acked, stop, legacy))
        for i, legacy in enumerate(kinds)
    ]


async def wait_for_acks(acked: dict[str, str], at_least: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while len(acked) < at_least and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert len(acked) >= at_least, f"only {len(acked)} writes acknowledged in {timeout:.0f} s"


async def missing_after_restart(server: ServerProcess, acked: dict[str, str]) -> list[str]:
    """Every acknowledged id fetched back with get_memory, with the content that was acknowledged."""
    async with httpx.AsyncClient() as http:
        health = (await http.get(server.base_url + "/health", timeout=10)).json()
    assert health["store"] == "ready", health
    missing = []
    async with Client(server.mcp_url) as client:
        for memory_id, content in acked.items():
            result = await client.call_tool("get_memory", {"memory_id": memory_id})
            if result.is_error or (result.structured_content or {}).get("content") != content:
                missing.append(memory_id)
    return missing


@pytest.mark.server("the process is the point: SIGTERM mid-write and a restart")
async def test_sigterm_during_writes_exits_0_and_keeps_every_acknowledged_write(
    tmp_path: Path, model_dir: Path
) -> None:
    server = ServerProcess(tmp_path / "data").start()
    acked: dict[str, str] = {}
    stop = asyncio.Event()
    try:
        writers = start_writers(server.base_url, "term", acked, stop)
        await wait_for_acks(acked, 20)
        assert server.proc is not None
        server.proc.send_signal(signal.SIGTERM)
        code = await asyncio.to_thread(server.proc.wait, 40)
        stop.set()
        await asyncio.wait(writers, timeout=CALL_TIMEOUT + 5)
    finally:
        stop.set()
        server.stop()
    assert code == 0, server.log()[-3000:]
    server.start()
    try:
        assert await missing_after_restart(server, acked) == []
    finally:
        server.stop()


@pytest.mark.server("the process is the point: kill -9 mid-write and a restart")
async def test_kill_9_during_writes_keeps_every_acknowledged_write(tmp_path: Path, model_dir: Path) -> None:
    server = ServerProcess(tmp_path / "data")
    acked: dict[str, str] = {}
    rounds = 3
    for number in range(1, rounds + 1):
        server.start()
        try:
            if number > 1:  # the store opened cleanly after the previous kill and lost nothing
                assert await missing_after_restart(server, acked) == [], f"after kill {number - 1}"
            stop = asyncio.Event()
            writers = start_writers(server.base_url, f"kill{number}", acked, stop)
            await wait_for_acks(acked, len(acked) + 10)
            await asyncio.sleep(0.1 * number)  # kill at different points of a write
            assert server.proc is not None
            server.proc.send_signal(signal.SIGKILL)
            await asyncio.to_thread(server.proc.wait, 20)
            stop.set()
            await asyncio.wait(writers, timeout=CALL_TIMEOUT + 5)
        finally:
            server.stop()  # after the kill this only closes the log
    server.start()
    try:
        assert await missing_after_restart(server, acked) == [], f"after kill {rounds}"
        assert len(acked) >= 30
    finally:
        server.stop()
