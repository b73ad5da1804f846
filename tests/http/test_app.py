"""The server as clients see it: the tools, health, the routes' rules, a restart and an unwritable
store through the real server object and app in this process (the MCP SDK's in-memory client, httpx's
ASGI transport); the start of a new store through `symbiote serve` (legacy SSE: tests/http/test_sse.py)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client

from symbiote.config import Settings
from tests.conftest import InProcess, ServerProcess, make_app, make_runtime


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


async def error_text(client: Client, tool: str, **arguments: Any) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error
    return result.content[0].text  # type: ignore[union-attr]


async def _raw_store_reply(in_process: InProcess) -> str:
    async with Client(in_process.server) as client:
        result = await client.call_tool("store_memory", {"content": "Our train to Leeds leaves at 9:40"})
    return result.content[0].text  # type: ignore[union-attr]


async def test_seed_scenario_store_then_find_by_meaning(in_process: InProcess) -> None:
    async with Client(in_process.server) as client:
        stored = await call(client, "store_memory", content="I love building web apps with React")
        found = await call(client, "search_memory", query="frontend development preferences")
    assert stored["memory_id"] in [hit["memory_id"] for hit in found["results"]]
    hit = next(h for h in found["results"] if h["memory_id"] == stored["memory_id"])
    assert set(hit) >= {"memory_id", "content", "timestamp", "relevance_score", "match"}
    assert "tags" not in hit and "superseded_by" not in hit  # what is empty is left out of the reply
    raw = await _raw_store_reply(in_process)
    assert "null" not in raw and "\n" not in raw, raw  # one line, nothing empty
    assert 30 <= hit["relevance_score"] <= 100


async def test_tags_and_timestamp_round_trip(in_process: InProcess) -> None:
    async with Client(in_process.server) as client:
        stored = await call(client, "store_memory", content="Allergic to peanuts", tags=["health", "food"])
        memory = await call(client, "get_memory", memory_id=stored["memory_id"])
    assert memory["tags"] == ["health", "food"]
    assert memory["timestamp"] == stored["timestamp"]
    assert memory["timestamp"].endswith("Z") and memory["memory_id"].startswith("mem_")


async def test_bad_arguments_are_readable_tool_errors(in_process: InProcess) -> None:
    async with Client(in_process.server) as client:
        assert "query is empty" in await error_text(client, "search_memory", query="   ")
        assert "from 1 to 20" in await error_text(client, "search_memory", query="x", limit=99)
        assert "limit" in await error_text(client, "search_memory", query="x", limit="lots")
        assert "content is empty" in await error_text(client, "store_memory", content="")
        assert "at most 10" in await error_text(client, "store_memory", content="x", tags=[str(i) for i in range(12)])
        missing = await error_text(client, "get_memory", memory_id="mem_00000000000000000001")
        assert "Memory not found" in missing and "search" in missing
        for text in (missing,):
            assert "Traceback" not in text


async def test_zero_results_is_an_empty_list_and_an_unrelated_query_no_answer(in_process: InProcess) -> None:
    async with Client(in_process.server) as client:
        empty = await call(client, "search_memory", query="anything")
        await call(client, "store_memory", content="The user's favourite colour is teal")
        unrelated = await call(client, "search_memory", query="quarterly tax filing deadlines")
        stats = await call(client, "memory_stats")
    assert empty["results"] == [] and not empty.get("below_cutoff")
    assert all(hit["match"] == "context" for hit in unrelated["results"] + unrelated.get("below_cutoff", []))
    assert stats["total_memories"] == 1


async def test_tools_have_descriptions_schemas_and_annotations(in_process: InProcess) -> None:
    async with Client(in_process.server) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        prompts = (await client.list_prompts()).prompts
        resources = (await client.list_resources()).resources
        assert client.instructions and "search_memory" in client.instructions
    assert set(tools) >= {
        "store_memory",
        "search_memory",
        "get_memory",
        "delete_memory",
        "list_memories",
        "memory_stats",
    }
    for tool in tools.values():
        assert tool.description and tool.output_schema and tool.annotations and tool.annotations.title
        assert "$ref" not in json.dumps(tool.output_schema), tool.name  # plain: what a client checks fastest
    for name in ("search_memory", "get_memory", "list_memories", "memory_stats"):
        assert tools[name].annotations.read_only_hint is True  # type: ignore[union-attr]
    assert tools["delete_memory"].annotations.destructive_hint is True  # type: ignore[union-attr]
    assert tools["search_memory"].input_schema["required"] == ["query"]
    assert [p.name for p in prompts] == ["venom_identity"]
    assert {str(r.uri) for r in resources} >= {"memory://recent", "memory://stats"}


async def test_prompt_and_resources_have_content(in_process: InProcess) -> None:
    async with Client(in_process.server) as client:
        await call(client, "store_memory", content="Resource check memory", tags=["resource"])
        prompt = await client.get_prompt("venom_identity")
        recent = await client.read_resource("memory://recent")
    text = prompt.messages[0].content.text  # type: ignore[union-attr]
    assert "search_memory" in text and "we" in text.lower()
    page = json.loads(recent.contents[0].text)  # type: ignore[union-attr]
    assert any(m["content"] == "Resource check memory" for m in page["memories"])


async def test_delete_then_gone(in_process: InProcess) -> None:
    async with Client(in_process.server) as client:
        stored = await call(client, "store_memory", content="The wifi password hint is the dog's name")
        deleted = await call(client, "delete_memory", memory_id=stored["memory_id"])
        assert deleted["deleted"] is True
        assert "Memory not found" in await error_text(client, "get_memory", memory_id=stored["memory_id"])


async def test_health_route(in_process: InProcess) -> None:
    await in_process.engine.stats()  # the store opened, as the warm-up at start opens it
    async with in_process.http() as http:
        for path in ("/", "/health"):
            body = (await http.get(path)).json()
            assert body["status"] == "ok" and body["personality"] == "default"
            assert body["store"] == "ready" and isinstance(body["memories"], int)
            assert body["version"] and body["uptime_seconds"] >= 0


async def test_get_on_mcp_is_405_and_foreign_host_is_421(in_process: InProcess) -> None:
    init = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    app = in_process.app
    async with app.router.lifespan_context(app), in_process.http() as http:
        assert (await http.get("/mcp")).status_code == 405
        foreign = await http.post("/mcp", json=init, headers={**headers, "Host": "evil.example.com"})
        assert foreign.status_code == 421
        origin = await http.post("/mcp", json=init, headers={**headers, "Origin": "https://evil.example.com"})
        assert origin.status_code == 403


async def test_ten_clients_at_once_lose_nothing(in_process: InProcess) -> None:
    async def one_client(n: int) -> list[str]:
        ids = []
        async with Client(in_process.server) as client:
            for i in range(3):
                stored = await call(
                    client, "store_memory", content=f"Client {n} fact {i}: likes the number {n * 10 + i}"
                )
                ids.append(stored["memory_id"])
                await call(client, "search_memory", query=f"client {n} favourite number")
        return ids

    all_ids = [i for ids in await asyncio.gather(*(one_client(n) for n in range(10))) for i in ids]
    assert len(set(all_ids)) == 30
    async with Client(in_process.server) as client:
        stats = await call(client, "memory_stats")
        for memory_id in all_ids:
            await call(client, "get_memory", memory_id=memory_id)
    assert stats["total_memories"] == 30


async def test_memories_survive_a_restart(settings: Settings) -> None:
    """A runtime closed and another opened on the same data directory: the same memories, in the
    same order, found the same way (a process's SIGTERM and kill -9: tests/http/test_shutdown.py)."""
    first = make_runtime(settings)
    async with Client(first.server) as client:
        ids = [  # five facts about different things: similar ones would be linked, the newer first
            (await call(client, "store_memory", content=f"Persistent fact: {fact}", tags=["persist"]))["memory_id"]
            for fact in (
                "the cat is grey",
                "rent is due monthly",
                "Ana plays chess",
                "tea over coffee",
                "likes jazz",
            )
        ]
    first.close()
    second = make_runtime(settings)
    async with Client(second.server) as client:
        page = await call(client, "list_memories", limit=10)
        found = await call(client, "search_memory", query="Persistent fact: Ana plays chess")
    assert [m["memory_id"] for m in page["memories"]] == ids[::-1]
    assert all(m["tags"] == ["persist"] for m in page["memories"])
    assert found["results"][0]["content"] == "Persistent fact: Ana plays chess"


@pytest.mark.server("the process's start is the point: the store created in the background while the model loads")
async def test_a_new_store_is_open_before_the_first_memory_operation(tmp_path: Path, model_dir: Path) -> None:
    """A start on an empty data directory creates the store in the background (from the copy made
    ahead), so the first store waits neither for Chroma's catalogue nor for an open."""
    data = tmp_path / "data"
    proc = ServerProcess(data).start(wait_ready=False)
    try:
        async with Client(proc.mcp_url) as client:
            assert len((await client.list_tools()).tools) >= 6
            await client.list_prompts()
            deadline = time.monotonic() + 60
            while (before := httpx.get(proc.base_url + "/health").json())["store"] != "ready":
                assert time.monotonic() < deadline and before["store"] == "idle (opens on first call)", before
                await asyncio.sleep(0.05)
            created_before = sorted(p.name for p in data.iterdir())
            stored = await call(client, "store_memory", content="I keep my bike in the hallway")
        after = httpx.get(proc.base_url + "/health").json()
    finally:
        proc.stop()
    assert "chroma.sqlite3" in created_before, created_before
    assert before["status"] == "ok" and before["memories"] == 0
    assert before["model"] == "loaded", (
        "the tools are listed once the model has loaded: the first call does not wait for it"
    )
    assert stored["memory_id"] and after["store"] == "ready" and after["memories"] == 1


async def test_unwritable_store_keeps_serving_and_says_why(settings: Settings, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the data directory should be")
    app = make_app(dataclasses.replace(settings, chromadb_path=blocker), warm_up=False)
    runtime = app.state.runtime
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as http,
    ):
        await runtime.engine.warm_up()  # what the start does: the store is tried before any memory operation
        early = (await http.get("/health")).json()
        assert early["store"] == "unavailable" and "not writable" in early["store_error"], early
        async with Client(runtime.server) as client:
            assert len((await client.list_tools()).tools) >= 6
            message = await error_text(client, "store_memory", content="hello")
        health = (await http.get("/health")).json()
    assert "CHROMADB_PATH" in message and "not writable" in message
    assert health["status"] == "degraded" and health["store"] == "unavailable" and health["memories"] is None


def test_a_plain_output_schema_accepts_and_refuses_what_the_model_does() -> None:
    """The published output schema (no `$ref`s; nullable fields as `anyOf`, never a `type` list, which
    the Inspector's `--strict` warns of) keeps every constraint of pydantic's: the same results pass,
    the same mistakes fail."""
    import jsonschema
    from pydantic import BaseModel, TypeAdapter

    from symbiote.mcp.server import plain_schema
    from symbiote.memory import SearchResults

    original = TypeAdapter(SearchResults).json_schema()
    plain = plain_schema(original)
    assert "$ref" not in json.dumps(plain) and '"type": [' not in json.dumps(plain)
    hit = {
        "memory_id": "mem_1",
        "content": "x",
        "timestamp": "2026-11-26T10:00:00Z",
        "type": None,
        "confidence": 0.5,
        "relevance_score": 70.0,
        "matched_by": "both",
        "match": "answer",
    }
    good = {"query": "q", "results": [hit], "count": 1, "message": "1 relevant memory."}
    bad = [
        {**good, "results": [{**hit, "relevance_score": 101}]},
        {**good, "results": [{**hit, "type": 5}]},
        {**good, "results": [{**hit, "matched_by": "luck"}]},
        {**good, "results": [{k: v for k, v in hit.items() if k != "content"}]},
        {**good, "count": "one"},
    ]
    for schema in (original, plain):
        jsonschema.validate(good, schema)
        for instance in bad:
            with pytest.raises(jsonschema.ValidationError):
                jsonschema.validate(instance, schema)

    class Node(BaseModel):  # a recursive model keeps its reference, and the definition it needs
        name: str | None
        children: list[Node] = []

    tree = plain_schema(TypeAdapter(Node).json_schema())
    jsonschema.validate({"name": None, "children": [{"name": "leaf"}]}, tree)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"name": "root", "children": [{"name": 3}]}, tree)
