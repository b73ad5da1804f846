"""Issue 30, item 3, against a real server: connections that never finish their request head are
closed within the header timeout, never more are open than the cap, and the owner's `/health` and
`/mcp` are answered at once while strangers hold (and keep reopening) hundreds of sockets.

The server here has a low cap (64) and a 1 s header timeout so a few hundred sockets show it in
seconds; benchmarks/stalled_connections.py measures 20,000 against the defaults.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from symbiote.config import PROJECT_ROOT
from tests.auth.support import INITIALIZE, MCP_HEADERS, oauth_env
from tests.conftest import ServerProcess
from tests.hardening.test_servers import api_key

CAP = 64
HEAD_SECONDS = 1.0
STRANGERS = 400
PARTIAL_HEAD = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Waiting: "


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory, model_dir: Path) -> Iterator[ServerProcess]:
    env = oauth_env(SYMBIOTE_MAX_CONNECTIONS=str(CAP), SYMBIOTE_HEADER_TIMEOUT_SECONDS=str(HEAD_SECONDS))
    proc = ServerProcess(tmp_path_factory.mktemp("connections") / "data", env=env).start()
    yield proc
    proc.stop()


def open_files(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


async def stall(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(PARTIAL_HEAD)
    await writer.drain()
    return reader, writer


async def closed_within(reader: asyncio.StreamReader, seconds: float) -> bool:
    try:
        return await asyncio.wait_for(reader.read(1), seconds) == b""
    except TimeoutError:
        return False
    except ConnectionError:
        return True


@pytest.mark.server("the real socket is the point: stalled connections, the cap and the header timeout")
async def test_a_connection_without_a_request_head_is_closed_in_seconds(guarded: ServerProcess) -> None:
    sockets = [await stall(guarded.port) for _ in range(5)]
    started = time.perf_counter()
    assert all(await asyncio.gather(*(closed_within(reader, HEAD_SECONDS + 4) for reader, _ in sockets)))
    assert time.perf_counter() - started < HEAD_SECONDS + 4
    # A keep-alive connection may wait between requests (uvicorn's keep-alive time), then ask again.
    reader, writer = await asyncio.open_connection("127.0.0.1", guarded.port)
    for _ in range(2):
        writer.write(f"GET /health HTTP/1.1\r\nHost: 127.0.0.1:{guarded.port}\r\n\r\n".encode())
        assert (await asyncio.wait_for(reader.readline(), 10)).startswith(b"HTTP/1.1 200")
        await asyncio.wait_for(reader.readuntil(b"}"), 10)
        await asyncio.sleep(HEAD_SECONDS * 2)
    writer.close()
    for _, other in sockets:
        other.close()


@pytest.mark.server("the real socket is the point: stalled connections, the cap and the header timeout")
async def test_never_more_connections_than_the_cap(guarded: ServerProcess) -> None:
    assert guarded.proc is not None
    files_before = open_files(guarded.proc.pid)
    sockets = [await stall(guarded.port) for _ in range(STRANGERS)]
    await asyncio.sleep(0.5)
    files = open_files(guarded.proc.pid)
    closed = sum(await asyncio.gather(*(closed_within(reader, 0.5) for reader, _ in sockets)))
    for _, writer in sockets:
        writer.close()
    assert files <= files_before + CAP + 2, (files_before, files)  # before: one open file per socket
    assert closed >= STRANGERS - CAP, closed  # the oldest were closed for the newest


@pytest.mark.server("the real socket is the point: stalled connections, the cap and the header timeout")
async def test_the_owner_is_answered_while_strangers_hold_hundreds_of_sockets(guarded: ServerProcess) -> None:
    """Strangers in a process of their own (benchmarks/stalled_connections.py) keep 400 half-open
    requests, reopening each one the server closes; the owner asks meanwhile."""
    key = api_key(guarded, "owner")
    strangers = subprocess.Popen(
        [
            sys.executable,
            str(PROJECT_ROOT / "benchmarks" / "stalled_connections.py"),
            "--port",
            str(guarded.port),
            "--sockets",
            str(STRANGERS),
            "--workers",
            "1",
            "--until-eof",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert strangers.stdout is not None
    try:
        assert await asyncio.to_thread(strangers.stdout.readline) == "holding\n"  # every socket is open
        latencies = []
        for _ in range(10):
            async with httpx.AsyncClient(base_url=guarded.base_url, timeout=10) as owner:
                started = time.perf_counter()
                health = await owner.get("/health")
                mcp = await owner.post(
                    "/mcp", json=INITIALIZE, headers={**MCP_HEADERS, "Authorization": f"Bearer {key}"}
                )
                latencies.append(time.perf_counter() - started)
            assert health.status_code == 200 and mcp.status_code == 200, (health.text, mcp.text)
        assert strangers.poll() is None  # they were still at it
        assert await asyncio.to_thread(strangers.stdout.readline) == "reopened\n"  # the server closed one
    finally:
        report = json.loads(strangers.communicate(input="", timeout=60)[0])
    assert report["stranger_connections_made"] > STRANGERS  # the server closed and they reopened all along
    assert max(latencies) < 2.0, latencies
    print(
        f"\n{report['stranger_connections_made']} stranger connections; owner /health + /mcp: max {max(latencies) * 1000:.0f} ms"
    )
