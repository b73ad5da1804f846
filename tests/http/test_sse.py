"""Legacy SSE to the letter, and the session table: ids, heartbeats, lifetime, health, no leaks.

Real `symbiote serve` processes with short heartbeat and lifetime intervals; raw HTTP with httpx
for the wire format, the SDK's legacy SSE client for whole sessions.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from mcp import Client
from mcp.client.sse import sse_client

from tests.conftest import ServerProcess

ENDPOINT = re.compile(r"^/messages/([0-9a-f]{32})$")
JSON = {"Content-Type": "application/json"}
LIFETIME = 4  # seconds, for the short-lived server


@pytest.fixture(scope="module")
def sse_server(tmp_path_factory: pytest.TempPathFactory, model_dir: Path) -> Iterator[ServerProcess]:
    env = {"SYMBIOTE_SSE_HEARTBEAT_SECONDS": "0.5", "SYMBIOTE_SSE_MAX_LIFETIME_SECONDS": "600"}
    proc = ServerProcess(tmp_path_factory.mktemp("sessions") / "data", env=env).start()
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def short_lived(tmp_path_factory: pytest.TempPathFactory, model_dir: Path) -> Iterator[ServerProcess]:
    env = {"SYMBIOTE_TRANSPORT": "sse", "SYMBIOTE_SSE_MAX_LIFETIME_SECONDS": str(LIFETIME)}
    proc = ServerProcess(tmp_path_factory.mktemp("short") / "data", env=env).start()
    yield proc
    proc.stop()


class Stream:
    """One raw `GET /sse`: events (and comments) as they arrive."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self.lines = response.aiter_lines()

    async def event(self, timeout: float = 10) -> dict[str, str]:
        """The next event (comments are skipped): {'event': ..., 'data': ...}."""
        found: dict[str, str] = {}
        async with asyncio.timeout(timeout):
            async for line in self.lines:
                if line == "" and found:
                    return found
                if line.startswith(":"):
                    continue
                if ":" in line:
                    key, _, value = line.partition(":")
                    found[key] = value.removeprefix(" ")
        raise EOFError("stream ended")

    async def raw_line(self, timeout: float = 10) -> str:
        async with asyncio.timeout(timeout):
            return await self.lines.__anext__()


@pytest.fixture
async def http(sse_server: ServerProcess) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=sse_server.base_url, timeout=10) as client:
        yield client


async def active_sessions(base_url: str) -> int:
    async with httpx.AsyncClient() as client:
        return int((await client.get(base_url + "/health")).json()["active_sessions"])


async def wait_for_sessions(base_url: str, expected: int, within: float = 10) -> int:
    deadline = time.monotonic() + within
    while True:
        count = await active_sessions(base_url)
        if count == expected or time.monotonic() > deadline:
            return count
        await asyncio.sleep(0.1)


@pytest.mark.server("the transport is the point: legacy SSE streamed over a real wire")
async def test_endpoint_event_202_and_the_answer_on_the_stream(http: httpx.AsyncClient) -> None:
    async with http.stream("GET", "/sse") as response:
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
        stream = Stream(response)
        first = await stream.event()
        assert first["event"] == "endpoint"
        match = ENDPOINT.match(first["data"])
        assert match, first
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2024-11-05",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"},
            },
        }
        accepted = await http.post(first["data"], json=init)
        assert accepted.status_code == 202
        answer = await stream.event()
        assert answer["event"] == "message"
        assert json.loads(answer["data"])["id"] == 1 and "serverInfo" in json.loads(answer["data"])["result"]
        await http.post(first["data"], json={"jsonrpc": "2.0", "method": "notifications/initialized"})
        # The SDK's query form reaches the same session.
        ping = await http.post(
            "/messages/", params={"session_id": match.group(1)}, json={"jsonrpc": "2.0", "id": 2, "method": "ping"}
        )
        assert ping.status_code == 202
        assert json.loads((await stream.event())["data"]) == {"jsonrpc": "2.0", "id": 2, "result": {}}
        # Malformed JSON-RPC: 400, and the session keeps working.
        assert (await http.post(first["data"], content=b"{not json", headers=JSON)).status_code == 400
        assert (await http.post(first["data"], json={"jsonrpc": "2.0", "no": "method"})).status_code == 400
        assert (await http.post(first["data"], json={"jsonrpc": "2.0", "id": 3, "method": "ping"})).status_code == 202
        assert json.loads((await stream.event())["data"])["id"] == 3
        endpoint = first["data"]
    # Closed: the same endpoint is now unknown.
    deadline = time.monotonic() + 10
    while (
        status := (await http.post(endpoint, json={"jsonrpc": "2.0", "id": 4, "method": "ping"})).status_code
    ) != 404:
        assert time.monotonic() < deadline, status
        await asyncio.sleep(0.1)


@pytest.mark.server("the transport is the point: legacy SSE streamed over a real wire")
async def test_unknown_sessions_are_404(http: httpx.AsyncClient) -> None:
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    assert (await http.post("/messages/" + "0" * 32, json=ping)).status_code == 404
    assert (await http.post("/messages/not-a-session", json=ping)).status_code == 404
    assert (await http.post("/messages/", params={"session_id": "f" * 32}, json=ping)).status_code == 404
    assert (await http.post("/messages/", json=ping)).status_code == 400


@pytest.mark.server("the transport is the point: legacy SSE streamed over a real wire")
async def test_session_ids_are_random_128_bit_and_unique(http: httpx.AsyncClient) -> None:
    ids = []
    for _ in range(20):
        async with http.stream("GET", "/sse") as response:
            first = await Stream(response).event()
            match = ENDPOINT.match(first["data"])
            assert match
            ids.append(match.group(1))
    assert len(set(ids)) == 20
    assert len(set("".join(ids))) == 16  # every hex digit turns up: not a counter or a timestamp


@pytest.mark.server("the transport is the point: heartbeats on an open stream")
async def test_heartbeat_comment_arrives(http: httpx.AsyncClient) -> None:
    async with http.stream("GET", "/sse") as response:
        stream = Stream(response)
        await stream.event()
        started = time.monotonic()
        while not (line := await stream.raw_line(timeout=5)).startswith(":"):
            pass
        assert "ping" in line and time.monotonic() - started < 3


@pytest.mark.server("the transport is the point: sessions of open streams and the process's log")
async def test_health_counts_sessions_and_logs_both_ways(sse_server: ServerProcess, http: httpx.AsyncClient) -> None:
    baseline = await wait_for_sessions(sse_server.base_url, 0)
    assert baseline == 0
    async with http.stream("GET", "/sse") as a, http.stream("GET", "/sse") as b, http.stream("GET", "/sse") as c:
        streams = [Stream(r) for r in (a, b, c)]  # kept referenced: a dropped line iterator closes its stream
        ids = [ENDPOINT.match((await stream.event())["data"]).group(1) for stream in streams]  # type: ignore[union-attr]
        health = (await http.get("/health")).json()
        assert health["active_sessions"] == 3
        assert {"uptime_seconds", "version", "personality"} <= set(health)
    assert await wait_for_sessions(sse_server.base_url, 0) == 0
    log = sse_server.log()
    for session_id in ids:
        assert f"session {session_id[:8]} opened" in log and f"session {session_id[:8]} closed" in log
        assert session_id not in log  # only a prefix is logged: the id is what lets one post


@pytest.mark.server("the transport is the point: a stream closed at its lifetime")
async def test_maximum_lifetime_closes_the_stream(short_lived: ServerProcess) -> None:
    async with httpx.AsyncClient(base_url=short_lived.base_url, timeout=10) as http:
        started = time.monotonic()
        async with http.stream("GET", "/sse") as response:
            stream = Stream(response)
            endpoint = (await stream.event())["data"]
            with pytest.raises((EOFError, StopAsyncIteration)):
                while True:
                    await stream.event(timeout=8)
        assert LIFETIME - 0.5 < time.monotonic() - started < LIFETIME + 6
        assert (await http.post(endpoint, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})).status_code == 404
    assert await wait_for_sessions(short_lived.base_url, 0) == 0
    assert "maximum lifetime" in short_lived.log()


@pytest.mark.server("the transport is the point: a stream closed at its lifetime")
async def test_sdk_client_connects_again_after_a_lifetime_close(short_lived: ServerProcess) -> None:
    url = short_lived.base_url + "/sse"
    for _ in range(2):  # each connect is a fresh session with its own lifetime
        async with Client(sse_client(url), mode="legacy") as client:
            assert (await client.call_tool("memory_stats", {})).is_error is False
    assert await wait_for_sessions(short_lived.base_url, 0) == 0


@pytest.mark.server("the transport is the point: streams opened and closed over a real wire")
async def test_hundreds_of_connects_leave_no_session_behind(sse_server: ServerProcess, http: httpx.AsyncClient) -> None:
    async def raw_cycle() -> None:
        async with http.stream("GET", "/sse") as response:
            await Stream(response).event()

    for _ in range(30):  # 300 raw streams, ten at a time
        await asyncio.gather(*(raw_cycle() for _ in range(10)))
    for _ in range(10):  # whole SDK sessions, including a tool call each
        async with Client(sse_client(sse_server.base_url + "/sse"), mode="legacy") as client:
            assert not (await client.call_tool("memory_stats", {})).is_error
    assert await wait_for_sessions(sse_server.base_url, 0) == 0


@pytest.mark.server("the process is the point: SIGTERM with streams open")
async def test_sigterm_ends_open_streams_cleanly(fresh_server: ServerProcess) -> None:
    """A graceful shutdown with legacy-SSE clients connected: their streams end properly (the
    client sees the end and reconnects elsewhere), nothing is logged as broken, exit code 0."""

    async def hold_stream() -> str:
        async with httpx.AsyncClient(base_url=fresh_server.base_url, timeout=30) as http:
            async with http.stream("GET", "/sse") as response:
                async for _line in response.aiter_lines():
                    pass
        return "ended"

    streams = [asyncio.create_task(hold_stream()) for _ in range(2)]
    await asyncio.sleep(1.0)
    assert fresh_server.proc is not None
    code = await asyncio.to_thread(fresh_server.stop)
    assert await asyncio.wait_for(asyncio.gather(*streams), 10) == ["ended", "ended"]
    assert code == 0
    assert " ERROR " not in fresh_server.log(), fresh_server.log()[-2000:]


@pytest.mark.server("the transport is the point: answers on a legacy SSE stream")
async def test_messages_answers_text_that_is_not_unicode_and_odd_ids_as_mcp_does(http: httpx.AsyncClient) -> None:
    """Issue 58: the legacy pair refuses the bodies the 2026-07-28 wire refuses, in the same words."""
    from tests.http.test_envelope import LEGACY, call

    surrogate, headers = call(LEGACY, "store_memory", '{"content":"my bike is blue","tags":["t\\ud800"]}')
    odd_id, _ = call(LEGACY, "memory_stats", "{}", "true")
    answers = []
    for body in (surrogate, odd_id):
        async with http.stream("GET", "/sse") as response:
            endpoint = (await Stream(response).event())["data"]
            answers.append(await http.post(endpoint, content=body, headers=JSON))
    on_mcp = [await http.post("/mcp", content=body, headers=headers) for body in (surrogate, odd_id)]
    assert [(a.status_code, a.json()) for a in answers] == [(a.status_code, a.json()) for a in on_mcp]
    assert [a.json()["error"]["code"] for a in answers] == [-32602, -32600]
