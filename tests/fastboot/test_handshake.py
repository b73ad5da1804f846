"""The handshake answered while the MCP SDK loads (`symbiote.fastboot.boot_app`, `symbiote.fastboot.handshake`).

The cache is recorded from the real app and replayed by the real server over real HTTP; the
build is held back by a gate so that "answered before the app existed" is certain, not timing.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from mcp import Client

from symbiote.config import Settings
from symbiote.fastboot import handshake
from symbiote.fastboot.boot_app import BootApp
from symbiote.fastboot.handshake import HandshakeCache, Reply
from tests.conftest import ServerProcess, free_port, make_app

HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
CLIENT = {"name": "test", "version": "1"}


def initialize(request_id: int | str = 1, version: str = "2025-06-18", **params: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {"roots": {"listChanged": True}},
            "clientInfo": CLIENT,
            **params,
        },
    }


def tools_list(request_id: int | str = 2) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/list"}


def prompts_list(request_id: int | str = 2) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "prompts/list"}


def discover(request_id: int | str = 3) -> dict[str, Any]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": CLIENT,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    return {"jsonrpc": "2.0", "id": request_id, "method": "server/discover", "params": {"_meta": meta}}


MODERN = {"mcp-protocol-version": "2026-07-28", "mcp-method": "server/discover"}
PROBES: list[tuple[dict[str, Any], dict[str, str]]] = [
    (initialize(), {}),
    (initialize("abc", "2024-11-05"), {}),
    (prompts_list(), {"mcp-protocol-version": "2025-06-18"}),
    (prompts_list(7), {}),
    (discover(), MODERN),
    ({"jsonrpc": "2.0", "id": 9, "method": "prompts/list", "params": {}}, {"mcp-protocol-version": "2025-11-25"}),
]


class Served:
    """A BootApp behind a real uvicorn on a free port, in this test's event loop."""

    def __init__(self, app: BootApp) -> None:
        self.app = app
        self.port = free_port()
        self.server = uvicorn.Server(uvicorn.Config(app, port=self.port, log_level="warning", ws="none"))
        self.task: asyncio.Task[None] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    async def __aenter__(self) -> Served:
        self.task = asyncio.create_task(self.server.serve())
        while not self.server.started:
            await asyncio.sleep(0.01)
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.server.should_exit = True
        assert self.task is not None
        await asyncio.wait_for(self.task, 30)


async def post(url: str, message: dict[str, Any], headers: dict[str, str] | None = None) -> httpx.Response:
    async with httpx.AsyncClient(timeout=60) as http:
        return await http.post(url, json=message, headers={**HEADERS, **(headers or {})})


async def recorded_cache(settings: Settings) -> HandshakeCache:
    saved: list[HandshakeCache] = []
    boot = BootApp(
        lambda: make_app(settings), record_as=handshake.fingerprint(settings), save=saved.append, record_delay=0
    )
    async with Served(boot):
        deadline = time.monotonic() + 60
        while not saved and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
    assert saved, "the cache was not recorded"
    return saved[0]


@pytest.mark.asyncio
async def test_handshake_is_answered_before_the_app_exists_and_matches_the_sdk(settings: Settings) -> None:
    cache = await recorded_cache(settings)
    gate = threading.Event()

    def build() -> Any:
        assert gate.wait(60)
        return make_app(settings)

    boot = BootApp(build, cache=cache)
    async with Served(boot) as served:
        early = [await post(served.url, message, headers) for message, headers in PROBES]
        async with Client(served.url) as client:  # the SDK client: discover, from the cache
            assert boot.app is None, "answered by the cache, not by the app"
            listing = asyncio.create_task(client.list_tools())
            await asyncio.sleep(0.5)
            assert not listing.done(), "tools/list waits for the app: the tools are listed once they can answer"
            gate.set()
            tools = await asyncio.wait_for(listing, 60)
            result = await asyncio.wait_for(client.call_tool("search_memory", {"query": "what am I building?"}), 60)
        assert not result.is_error, result.content
        assert result.structured_content == {"results": []} or result.structured_content["results"] == []
        late = [await post(served.url, message, headers) for message, headers in PROBES]
    assert {tool.name for tool in tools.tools} >= {"store_memory", "search_memory", "memory_stats"}
    for (message, _), before, after in zip(PROBES, early, late):
        assert before.status_code == after.status_code == 200, (message, before.text)
        assert before.headers["content-type"] == after.headers["content-type"]
        assert before.json() == after.json(), message["method"]
        assert before.json()["id"] == message["id"]
    assert early[0].json()["result"]["serverInfo"]["name"]
    assert early[0].json()["result"]["protocolVersion"] == "2025-06-18"
    assert early[1].json()["result"]["protocolVersion"] == "2024-11-05"


@pytest.mark.asyncio
async def test_anything_unusual_waits_for_the_sdk_and_gets_its_answer(settings: Settings) -> None:
    cache = await recorded_cache(settings)
    gate = threading.Event()
    boot = BootApp(lambda: (gate.wait(60), make_app(settings))[1], cache=cache)
    unusual = [
        (initialize(), {"host": "evil.example.com"}),  # DNS rebinding: the SDK refuses it (421)
        (initialize(version="1999-01-01"), {}),  # a version we never recorded: the SDK negotiates
        (
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}},
            {},
        ),  # invalid
        (tools_list(), {"mcp-protocol-version": "2030-01-01"}),  # unsupported version header
    ]
    async with Served(boot) as served:
        pending = [asyncio.create_task(post(served.url, message, headers)) for message, headers in unusual]
        await asyncio.sleep(0.5)
        assert not any(task.done() for task in pending), "none of these may be answered from the cache"
        gate.set()
        answers = [await asyncio.wait_for(task, 60) for task in pending]
    assert answers[0].status_code == 421
    assert answers[1].status_code == 200 and answers[1].json()["result"]["protocolVersion"] != "1999-01-01"
    assert answers[2].status_code in (200, 400) and "error" in answers[2].json()
    assert answers[3].status_code == 400


def plain_scope(headers: dict[str, str] | None = None, path: str = "/mcp") -> dict[str, Any]:
    merged = {"host": "127.0.0.1:8000", **HEADERS, **(headers or {})}
    return {
        "type": "http",
        "method": "POST",
        "path": path,
        "headers": [(k.encode(), v.encode()) for k, v in merged.items()],
    }


@pytest.fixture
def toy_cache() -> HandshakeCache:
    probe = json.dumps(handshake.PROBE_ID)
    body = '{"jsonrpc":"2.0","id":' + probe + ',"result":{"prompts":[]}}'
    init = '{"jsonrpc":"2.0","id":' + probe + ',"result":{"protocolVersion":"2025-06-18"}}'
    json_type = (("content-type", "application/json"),)
    return HandshakeCache(
        "print",
        {
            "prompts/list|2025-06-18|": Reply(200, json_type, body),
            "initialize||2025-06-18": Reply(200, json_type, init),
            "notifications/initialized|2025-06-18|": Reply(202, json_type, ""),
            "server/discover|2026-07-28|": Reply(200, json_type, body),
        },
        modern=("2026-07-28",),
    )


def test_a_plain_request_of_each_era_is_replayed(toy_cache: HandshakeCache) -> None:
    assert toy_cache.answer(plain_scope(), json.dumps(initialize()).encode()) is not None
    assert toy_cache.answer(plain_scope(MODERN), json.dumps(discover()).encode()) is not None
    assert toy_cache.answer(plain_scope({"host": "localhost"}), json.dumps(initialize()).encode()) is not None
    assert toy_cache.answer(plain_scope({"host": "[::1]:8000"}), json.dumps(initialize()).encode()) is not None


def test_replay_puts_the_callers_id_in_and_counts_the_bytes(toy_cache: HandshakeCache) -> None:
    for request_id in (41, "req-7", 0, "café"):
        answer = toy_cache.answer(
            plain_scope({"mcp-protocol-version": "2025-06-18"}), json.dumps(prompts_list(request_id)).encode()
        )
        assert answer is not None
        status, headers, body = answer
        assert status == 200 and json.loads(body) == {"jsonrpc": "2.0", "id": request_id, "result": {"prompts": []}}
        assert json.dumps(request_id, ensure_ascii=False).encode() in body  # the id's own bytes, like the SDK
        assert (b"content-length", str(len(body)).encode()) in headers
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    answer = toy_cache.answer(plain_scope({"mcp-protocol-version": "2025-06-18"}), json.dumps(note).encode())
    assert answer is not None and answer[0] == 202 and answer[2] == b""


@pytest.mark.parametrize(
    ("headers", "message"),
    [
        ({"origin": "http://127.0.0.1:8000"}, initialize()),  # a browser: CORS is the app's business
        ({"host": "memory.example.com"}, initialize()),
        ({"authorization": "Bearer x"}, initialize()),
        ({"mcp-session-id": "abc"}, initialize()),
        ({"content-type": "text/plain"}, initialize()),
        ({"accept": "application/json"}, initialize()),
        ({}, initialize(request_id=True)),  # type: ignore[arg-type]
        ({}, initialize(request_id=None)),  # type: ignore[arg-type]
        ({}, initialize(clientInfo={"name": "x"})),  # no version: invalid, the SDK says why
        ({}, initialize(clientInfo={"name": "x", "version": "1", "icons": [{"src": 1}]})),
        ({}, initialize(capabilities={"roots": "yes"})),
        ({}, initialize(extra="field")),
        ({}, {**initialize(), "extra": 1}),
        ({}, [initialize()]),  # a batch
        (
            {"mcp-protocol-version": "2025-06-18"},
            {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"cursor": "x"}},
        ),
        ({"mcp-protocol-version": "2025-06-18", "mcp-method": "ping"}, prompts_list()),
        ({"mcp-protocol-version": "2025-06-18"}, tools_list()),  # listed once the tools can answer: never cached
        ({"mcp-protocol-version": "2025-06-18"}, {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {}}),
        ({"mcp-protocol-version": "2025-06-18"}, {"jsonrpc": "2.0", "method": "notifications/initialized", "id": 3}),
        ({"mcp-protocol-version": "2025-06-18"}, {"jsonrpc": "1.0", "id": 1, "method": "tools/list"}),
        ({"mcp-protocol-version": "2024-11-05"}, prompts_list()),  # not in this cache
        ({"accept": "application/json-seq, text/event-stream"}, initialize()),
        ({"content-type": "Application/JSON"}, initialize()),
        ({}, initialize(capabilities={"roots": {"listChanged": {}}})),
        ({}, initialize(capabilities={"sampling": {"context": True}})),
        ({}, initialize(capabilities={"elicitation": {"form": True}})),
        ({}, initialize(capabilities={"experimental": {}})),
        ({}, initialize(clientInfo={"name": "x", "version": "1", "icons": "x"})),
        ({}, initialize(_meta={})),  # an envelope on the old handshake
        ({"mcp-method": "initialize"}, initialize()),
        # the 2026-07-28 envelope: the SDK checks the Mcp-Method header and every _meta key
        ({"mcp-protocol-version": "2026-07-28"}, discover()),
        (MODERN, {**discover(), "params": {}}),
        (
            MODERN,
            {
                **discover(),
                "params": {
                    "_meta": {k: v for k, v in discover()["params"]["_meta"].items() if "Capabilities" not in k}
                },
            },
        ),
        (
            MODERN,
            {
                **discover(),
                "params": {
                    "_meta": {**discover()["params"]["_meta"], "io.modelcontextprotocol/protocolVersion": "2025-11-25"}
                },
            },
        ),
        (MODERN, {**discover(), "params": {**discover()["params"], "cursor": "x"}}),
    ],
)
def test_only_plain_handshake_requests_are_replayed(
    toy_cache: HandshakeCache, headers: dict[str, str], message: Any
) -> None:
    assert toy_cache.answer(plain_scope(headers), json.dumps(message).encode()) is None


@pytest.mark.parametrize(
    "body",
    [
        json.dumps(initialize()).encode("utf-16"),
        b"\xef\xbb\xbf" + json.dumps(initialize()).encode(),  # a byte-order mark
        json.dumps(initialize(clientInfo={"name": "\ud800", "version": "1"})).encode(),  # a lone surrogate, escaped
        b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": ',
    ],
)
def test_bodies_the_sdk_reads_differently_are_left_to_it(toy_cache: HandshakeCache, body: bytes) -> None:
    assert toy_cache.answer(plain_scope(), body) is None


def test_only_small_posts_to_mcp_are_read_early(settings: Settings, toy_cache: HandshakeCache) -> None:
    assert toy_cache.wants_body({**plain_scope(), "headers": [(b"content-length", b"200")]})
    assert not toy_cache.wants_body({**plain_scope(), "headers": [(b"content-length", b"9999999")]})
    assert not toy_cache.wants_body({**plain_scope(), "headers": []})  # chunked: unknown size
    assert not toy_cache.wants_body({**plain_scope(path="/health"), "headers": [(b"content-length", b"2")]})
    small = dataclasses.replace(settings, max_body_bytes=1024)  # the app answers 413 above it
    toy_cache.fingerprint = handshake.fingerprint(small)
    toy_cache.save(small)
    loaded = HandshakeCache.load(small)
    assert loaded is not None and loaded.modern == toy_cache.modern
    assert not loaded.wants_body({**plain_scope(), "headers": [(b"content-length", b"2000")]})


def test_the_cache_goes_stale_when_what_shapes_the_answers_changes(
    settings: Settings, toy_cache: HandshakeCache, own_user_cache: Path
) -> None:
    toy_cache.fingerprint = handshake.fingerprint(settings)
    toy_cache.save(settings)
    assert handshake.cache_path(settings).is_file()
    loaded = HandshakeCache.load(settings)
    assert loaded is not None and loaded.replies == toy_cache.replies
    assert HandshakeCache.load(dataclasses.replace(settings, port=9999, log_level="DEBUG")) is not None
    assert HandshakeCache.load(dataclasses.replace(settings, personality="variant2")) is None
    assert HandshakeCache.load(dataclasses.replace(settings, chatgpt_tools="on")) is None
    handshake.cache_path(settings).write_text("{not json", encoding="utf-8")
    assert HandshakeCache.load(settings) is not None, "the copy in the user's cache directory answers"
    for copy in (own_user_cache / "symbiote").glob("handshake-cache-*.json"):
        copy.write_text("{not json", encoding="utf-8")
    assert HandshakeCache.load(settings) is None


def test_only_open_loopback_http_servers_use_it(settings: Settings) -> None:
    assert handshake.usable(settings)
    assert not handshake.usable(dataclasses.replace(settings, transport="sse"))
    assert not handshake.usable(dataclasses.replace(settings, auth_mode="oauth"))
    assert not handshake.usable(
        dataclasses.replace(settings, host="0.0.0.0", auth_mode="none", allow_unauthenticated=True)
    )


@pytest.mark.asyncio
async def test_shutting_down_while_building_releases_waiting_requests(settings: Settings) -> None:
    gate = threading.Event()
    boot = BootApp(lambda: (gate.wait(60), make_app(settings))[1])
    async with Served(boot) as served:
        waiting = asyncio.create_task(
            post(served.url, {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {}})
        )
        await asyncio.sleep(0.3)
        assert not waiting.done()
        boot.stop_waiting()  # what `symbiote serve` does on SIGTERM / Ctrl+C
        answer = await asyncio.wait_for(waiting, 10)
        gate.set()
        await asyncio.sleep(0.5)
    assert answer.status_code == 503 and "shutting down" in answer.json()["error"]
    assert boot.app is None, "an app that finished building after the stop is not started"


@pytest.mark.asyncio
async def test_a_failed_build_is_reported_and_requests_get_503() -> None:
    failures: list[BaseException] = []

    def build() -> Any:
        raise RuntimeError("the personalities directory is missing")

    async with Served(BootApp(build, on_failure=failures.append)) as served:  # `symbiote serve` exits on it
        deadline = time.monotonic() + 10
        while not failures and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        answer = await post(served.url, initialize())
    assert [str(exc) for exc in failures] == ["the personalities directory is missing"]
    assert answer.status_code == 503
    assert "failed to start" in answer.json()["error"]


@pytest.fixture
def data_dir(tmp_path: Path, model_dir: Path) -> Iterator[Path]:
    yield tmp_path / "data"


@pytest.mark.server("the process is the point: a second start of `symbiote serve` replays what the first recorded")
def test_symbiote_serve_records_the_cache_once_and_replays_it(data_dir: Path) -> None:
    first = ServerProcess(data_dir).start()
    try:
        cache_file = data_dir / handshake.CACHE_FILE
        deadline = time.monotonic() + 30
        while not cache_file.is_file() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert cache_file.is_file(), first.log()
        reference = [
            httpx.post(first.mcp_url, json=message, headers={**HEADERS, **headers}, timeout=30).json()
            for message, headers in PROBES
        ]
    finally:
        assert first.stop() == 0
    recorded_at = cache_file.stat().st_mtime_ns
    second = ServerProcess(data_dir).start(wait_health=False)
    try:
        deadline = time.monotonic() + 60
        while True:  # the first moment it listens, as a client retrying its connection
            assert second.proc is not None and second.proc.poll() is None and time.monotonic() < deadline, second.log()
            try:
                socket.create_connection(("127.0.0.1", second.port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.01)
        replayed = [
            httpx.post(second.mcp_url, json=message, headers={**HEADERS, **headers}, timeout=30).json()
            for message, headers in PROBES
        ]
        assert replayed == reference

        async def use() -> Any:
            async with Client(second.mcp_url) as client:
                stored = await client.call_tool(
                    "store_memory", {"content": "We deploy Symbiote on Azure Container Apps"}
                )
                found = await client.call_tool("search_memory", {"query": "where do we deploy?"})
            return stored, found

        stored, found = asyncio.run(use())
        assert not stored.is_error and not found.is_error
        assert stored.structured_content["memory_id"] in [
            hit["memory_id"] for hit in found.structured_content["results"]
        ]
    finally:
        assert second.stop() == 0
    assert cache_file.stat().st_mtime_ns == recorded_at, "a fresh cache is not recorded again"
    assert "handshake cache recorded" in first.log() and "handshake cache recorded" not in second.log()
    assert "handshake cache current" in second.log() and "handshake cache current" not in first.log()


@pytest.mark.server(
    "the process is the point: `symbiote record-handshake` prepares the first start of `symbiote serve`"
)
def test_record_handshake_prepares_the_first_start(data_dir: Path) -> None:
    env = {**ServerProcess(data_dir).env}
    command = [sys.executable, "-m", "symbiote", "record-handshake"]
    first = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0 and "recorded" in first.stdout, first.stderr
    again = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and "up to date" in again.stdout
    recorded_at = (data_dir / handshake.CACHE_FILE).stat().st_mtime_ns
    server = ServerProcess(data_dir).start()  # the same settings as `symbiote serve` will have
    try:
        answer = httpx.post(server.mcp_url, json=initialize(), headers=HEADERS, timeout=30)
        assert answer.status_code == 200 and answer.json()["result"]["protocolVersion"] == "2025-06-18"
    finally:
        assert server.stop() == 0
    assert (data_dir / handshake.CACHE_FILE).stat().st_mtime_ns == recorded_at, "the server found it current"
    assert "handshake cache current" in server.log(), "found current at the start: no recording is planned"
    assert "handshake cache recorded" not in server.log()
    elsewhere = ServerProcess(data_dir.parent / "new-data").start()  # a data directory setup never saw
    try:
        answer = httpx.post(elsewhere.mcp_url, json=initialize(), headers=HEADERS, timeout=30)
        assert answer.status_code == 200
    finally:
        assert elsewhere.stop() == 0
    assert "handshake cache current" in elsewhere.log(), "the user's cache answered for it"
    assert "handshake cache recorded" not in elsewhere.log()
