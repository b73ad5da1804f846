"""One suite, three transports: every tool behaves the same over streamable HTTP, legacy SSE and stdio.

`connect` is parametrized: a real `symbiote serve` over HTTP, its default (the suite's shared `server`;
the SDK client on /mcp), a real `symbiote serve --transport sse` (the SDK's legacy SSE client on
/sse), and a real `symbiote serve --transport stdio` child process (the SDK's stdio client), each
started once for the module: the tests store their own texts and look only for what they stored.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from mcp import Client, StdioServerParameters
from mcp.client.sse import sse_client

from tests.conftest import MODEL_DIR, InProcess, ServerProcess

pytestmark = pytest.mark.asyncio(loop_scope="session")
SERVED = pytest.mark.server("the transport is the point: each tool over stdio, streamable HTTP and SSE on a real wire")

TRANSPORTS = ("http", "sse", "stdio")


@pytest.fixture(scope="module")
def sse_server(tmp_path_factory: pytest.TempPathFactory, model_dir: Path) -> Iterator[ServerProcess]:
    proc = ServerProcess(tmp_path_factory.mktemp("t-sse") / "data", env={"SYMBIOTE_TRANSPORT": "sse"}).start()
    yield proc
    proc.stop()


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def stdio_client(tmp_path_factory: pytest.TempPathFactory, model_dir: Path) -> AsyncIterator[Client]:
    """One `symbiote serve --transport stdio` child and its session for the module's stdio cases. A
    task of its own holds the session: anyio's cancel scopes are entered and left in one task, and
    pytest-asyncio sets a fixture up and tears it down in two."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "symbiote", "serve", "--transport", "stdio"],
        env={
            **os.environ,
            "CHROMADB_PATH": str(tmp_path_factory.mktemp("t-stdio") / "data"),
            "SYMBIOTE_MODEL_DIR": str(MODEL_DIR),
            "HF_HUB_OFFLINE": "1",
            "PORT": "1",  # nothing is bound: a privileged port would fail if it were
        },
    )
    opened: asyncio.Future[Client] = asyncio.get_running_loop().create_future()
    finished = asyncio.Event()

    async def hold() -> None:
        try:
            async with Client(params) as client:
                opened.set_result(client)
                await finished.wait()
        except BaseException as exc:
            if not opened.done():
                opened.set_exception(exc)
            raise

    holder = asyncio.create_task(hold())
    try:
        yield await opened
    finally:
        finished.set()
        await holder


@pytest.fixture(params=TRANSPORTS)
def connect(request: pytest.FixtureRequest) -> Callable[[], AbstractAsyncContextManager[Client]]:
    """Connects an SDK client over the transport named by the parameter: `async with connect() as client`.

    (A factory rather than a connected client: anyio's cancel scopes must be entered and left in the
    same task, and pytest-asyncio sets fixtures up and tears them down in different ones. Over stdio
    the module's one session, held by its own task, is lent to the test.)
    """
    transport = request.param
    if transport == "http":
        url = request.getfixturevalue("server").mcp_url  # the suite's shared server: HTTP is the default
        return lambda: Client(url)
    if transport == "sse":
        sse_url = request.getfixturevalue("sse_server").base_url + "/sse"
        return lambda: Client(sse_client(sse_url), mode="legacy")
    shared: Client = request.getfixturevalue("stdio_client")

    @contextlib.asynccontextmanager
    async def lent() -> AsyncIterator[Client]:
        yield shared

    return lent


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


@SERVED
async def test_store_search_get_list_stats(connect: Callable[[], AbstractAsyncContextManager[Client]]) -> None:
    async with connect() as client:
        marker = uuid.uuid4().hex[:8]
        stored = await call(
            client, "store_memory", content=f"Project {marker} ships its web app with React", tags=["work", marker]
        )
        # The random marker moves the query's vector: a question close in meaning keeps this
        # memory far above the 30 cut-off whatever the marker (87-96 over 60 markers; the terse
        # "Project <marker> frontend framework" scored 33-90 and once, in CI, fell under 30).
        found = await call(
            client, "search_memory", query=f"Which frontend framework does project {marker} use for its web app?"
        )
        got = await call(client, "get_memory", memory_id=stored["memory_id"])
        page = await call(client, "list_memories", limit=20)
        stats = await call(client, "memory_stats")
        assert stored["memory_id"] in [hit["memory_id"] for hit in found["results"]]
        assert got["content"] == f"Project {marker} ships its web app with React" and got["tags"] == ["work", marker]
        assert stored["memory_id"] in [m["memory_id"] for m in page["memories"]]
        assert stats["total_memories"] >= 1


@SERVED
async def test_validation_errors_are_readable_tool_errors(
    connect: Callable[[], AbstractAsyncContextManager[Client]],
) -> None:
    async with connect() as client:
        empty = await client.call_tool("search_memory", {"query": "   "})
        too_many = await client.call_tool("search_memory", {"query": "x", "limit": 99})
        missing = await client.call_tool("get_memory", {"memory_id": "mem_00000000000000000001"})
        for result in (empty, too_many, missing):
            assert result.is_error
            assert "Traceback" not in result.content[0].text  # type: ignore[union-attr]
        assert "query is empty" in empty.content[0].text  # type: ignore[union-attr]
        assert "from 1 to 20" in too_many.content[0].text  # type: ignore[union-attr]
        assert "Memory not found" in missing.content[0].text  # type: ignore[union-attr]


@SERVED
async def test_tools_prompt_and_resources(connect: Callable[[], AbstractAsyncContextManager[Client]]) -> None:
    async with connect() as client:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        prompt = await client.get_prompt("venom_identity")
        stats = await client.read_resource("memory://stats")
        assert tools >= {
            "store_memory",
            "search_memory",
            "get_memory",
            "delete_memory",
            "list_memories",
            "memory_stats",
        }
        assert "search_memory" in prompt.messages[0].content.text  # type: ignore[union-attr]
        assert isinstance(json.loads(stats.contents[0].text), dict)  # type: ignore[union-attr]
        assert client.instructions and "search_memory" in client.instructions


@SERVED
async def test_delete_then_gone(connect: Callable[[], AbstractAsyncContextManager[Client]]) -> None:
    async with connect() as client:
        stored = await call(client, "store_memory", content=f"Temporary note {uuid.uuid4().hex}")
        assert (await call(client, "delete_memory", memory_id=stored["memory_id"]))["deleted"] is True
        gone = await client.call_tool("get_memory", {"memory_id": stored["memory_id"]})
        assert gone.is_error and "Memory not found" in gone.content[0].text  # type: ignore[union-attr]


@SERVED
async def test_sse_transport_serves_only_the_legacy_pair(sse_server: ServerProcess) -> None:
    async with httpx.AsyncClient(base_url=sse_server.base_url) as http:
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        assert (
            await http.post("/mcp", json=ping, headers={"Accept": "application/json, text/event-stream"})
        ).status_code == 404
        health = (await http.get("/health")).json()
    assert health["transport"] == "sse" and health["status"] == "ok"
    assert "transport: sse" in sse_server.log()


@SERVED
async def test_http_transport_is_the_default_and_logged(server: ServerProcess) -> None:
    assert "SYMBIOTE_TRANSPORT" not in server.env  # the shared server is started without it
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        health = (await http.get("/health")).json()
    assert health["transport"] == "http" and "active_sessions" in health
    assert "transport: http" in server.log()


async def test_bad_transport_is_a_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`symbiote serve` with a transport it does not know ends with status 2 and names the setting
    (`main` in this process: the command stops at its settings, before anything is served)."""
    from symbiote.cli import main

    monkeypatch.setenv("CHROMADB_PATH", str(tmp_path))
    monkeypatch.setenv("SYMBIOTE_TRANSPORT", "carrier-pigeon")
    umask = os.umask(0o077)  # `serve` sets the process's umask first: this process keeps its own
    try:
        with pytest.raises(SystemExit) as exited:
            main(["serve"])
    finally:
        os.umask(umask)
    assert exited.value.code == 2 and "SYMBIOTE_TRANSPORT='carrier-pigeon'" in capsys.readouterr().err


async def test_every_tool_s_result_is_its_output_schema_and_every_error_is_whole_text(in_process: InProcess) -> None:
    """What claude.ai and Claude Desktop check (a structured result that fails `outputSchema` fails the
    call), and what Claude Code and ChatGPT read (structured content only; the text of an error):
    every tool called (the SDK's client on the real server object: the results are the point, not the
    wire), every result checked against its own schema, every error's text whole."""
    import jsonschema

    marker = uuid.uuid4().hex[:8]
    async with Client(in_process.server) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        results: dict[str, dict[str, Any]] = {}

        async def check(tool: str, **arguments: Any) -> dict[str, Any]:
            result = await client.call_tool(tool, arguments)
            assert not result.is_error and result.structured_content is not None, (tool, result.content)
            jsonschema.validate(result.structured_content, tools[tool].output_schema or {})
            text = json.loads(result.content[0].text)  # type: ignore[union-attr]
            assert text == result.structured_content, tool  # the text says what the data says
            results[tool] = result.structured_content
            return result.structured_content

        older = await check("store_memory", content=f"Dana {marker} lives in Oslo", tags=[marker])
        batch = await check(
            "store_memories", memories=[{"content": f"Dana {marker} moved to Bergen", "tags": [marker]}]
        )
        newer = batch["results"][0]["memory_id"]
        await check("search_memory", query=f"where does Dana {marker} live?")
        await check("get_memory", memory_id=older["memory_id"])
        await check("get_memories", memory_ids=[older["memory_id"], "mem_17000000000000000001"])
        await check("link_memories", newer_id=newer, older_id=older["memory_id"])
        await check("unlink_memories", newer_id=newer, older_id=older["memory_id"])
        await check("update_memory", memory_id=newer, tags=[marker, "city"])
        await check("list_memories", limit=2)
        await check("memory_stats")
        await check("append_history", conversation_id=marker, role="user", text="I moved to Bergen")
        await check("get_history", conversation_id=marker)
        await check("build_context", conversation_id=marker, message="where do I live?")
        await check("delete_memory", memory_id=older["memory_id"])
        assert set(results) == set(tools), set(tools) - set(results)

        for tool, arguments in {
            "get_memory": {"memory_id": "mem_17000000000000000001"},
            "store_memory": {"content": ""},
        }.items():
            refused = await client.call_tool(tool, arguments)
            assert refused.is_error and refused.structured_content is None, (tool, refused)
            (said,) = refused.content
            assert said.type == "text" and said.text.endswith(".") and len(said.text) > 20, (tool, said)
