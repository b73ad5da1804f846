"""Both MCP wires answer a body alike (issue 58): text that is not Unicode is refused with -32602
naming the field, an id that cannot be one with -32600, before anything is acknowledged. The real
app in-process (httpx's ASGI transport), a body written as bytes where the point is its escapes."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from symbiote.config import Settings
from symbiote.memory import MemoryEngine
from tests.conftest import make_app

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
WIRES = (MODERN, LEGACY)


@contextlib.asynccontextmanager
async def serving(settings: Settings) -> AsyncIterator[tuple[httpx.AsyncClient, MemoryEngine]]:
    """The app on `settings`, its lifespan run, and an HTTP client on it (in the test's own task)."""
    app = make_app(settings)
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as client:
            yield client, app.state.runtime.engine


def call(wire: str, tool: str, arguments: str, request_id: str = "1") -> tuple[bytes, dict[str, str]]:
    """A tools/call body as bytes (`arguments` is JSON text, escapes as written) and its headers."""
    meta = (
        f',"_meta":{{"io.modelcontextprotocol/protocolVersion":"{MODERN}",'
        '"io.modelcontextprotocol/clientCapabilities":{}}'
        if wire == MODERN
        else ""
    )
    body = (
        f'{{"jsonrpc":"2.0","id":{request_id},"method":"tools/call",'
        f'"params":{{"name":"{tool}","arguments":{arguments}{meta}}}}}'
    ).encode()
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": wire,
    }
    if wire == MODERN:
        headers |= {"Mcp-Method": "tools/call", "Mcp-Name": tool}
    return body, headers


async def post(http: httpx.AsyncClient, wire: str, tool: str, arguments: str, request_id: str = "1") -> Any:
    body, headers = call(wire, tool, arguments, request_id)
    answer = await http.post("/mcp", content=body, headers=headers)
    return answer.status_code, answer.json()


SURROGATES = [
    ("store_memory", '{"content":"my bike is blue","tags":["t\\ud800"]}', "params.arguments.tags[0]"),
    ("store_memory", '{"content":"my bike is blue","conversation_id":"c\\udfff"}', "params.arguments.conversation_id"),
    ("store_memory", '{"content":"half \\ud83d of a smile"}', "params.arguments.content"),
    ("search_memory", '{"query":"bike \\ud800"}', "params.arguments.query"),
    ("search_memory", '{"query":"bike","tags":["\\udc00"]}', "params.arguments.tags[0]"),
    ("update_memory", '{"memory_id":"mem_17961569649291019792","content":"x\\ud800"}', "params.arguments.content"),
    ("store_memories", '{"memories":[{"content":"ok"},{"content":"x","tags":["\\ud800"]}]}', None),
    ("build_context", '{"conversation_id":"c\\ud800","message":"hi"}', "params.arguments.conversation_id"),
    ("append_history", '{"conversation_id":"c","role":"user","text":"\\ud800"}', "params.arguments.text"),
]


@pytest.mark.parametrize(("tool", "arguments", "where"), SURROGATES)
async def test_text_that_is_not_unicode_is_refused_alike_on_both_wires_naming_the_field(
    settings: Settings, tool: str, arguments: str, where: str | None
) -> None:
    async with serving(settings) as (http, engine):
        answers = [await post(http, wire, tool, arguments) for wire in WIRES]
        stored = (await engine.stats()).total_memories
    assert answers[0] == answers[1], answers
    status, body = answers[0]
    assert status == 400 and body["id"] == 1 and body["error"]["code"] == -32602, body
    assert "not valid Unicode text" in body["error"]["message"]
    assert (where or "params.arguments.memories[1].tags[0]") in body["error"]["message"]
    assert stored == 0  # nothing acknowledged, nothing journalled


@pytest.mark.parametrize("request_id", ["true", "false", "{}", "[]", "1.5", "1e3", "null", "NaN", "-Infinity"])
async def test_an_id_that_is_neither_a_string_nor_an_integer_is_invalid_request_on_both_wires(
    settings: Settings, request_id: str
) -> None:
    async with serving(settings) as (http, _engine):
        answers = [await post(http, wire, "memory_stats", "{}", request_id) for wire in WIRES]
    assert answers[0] == answers[1], answers
    status, body = answers[0]
    assert status == 400 and body["id"] is None and body["error"]["code"] == -32600, body


async def test_paired_surrogates_are_text_and_an_id_inside_the_arguments_is_not_the_request_id(
    settings: Settings,
) -> None:
    arguments = '{"content":"smile \\ud83d\\ude00 when \\"id\\": true","tags":["\\ud83d\\ude00"]}'
    async with serving(settings) as (http, _engine):
        answers = [await post(http, wire, "store_memory", arguments, '"req-1"') for wire in WIRES]
    for status, body in answers:
        assert status == 200 and body["id"] == "req-1", body
        stored = body["result"]["structuredContent"]
        assert stored["status"] in ("stored", "duplicate") and stored["tags"] == ["\U0001f600"], stored


def test_the_check_reads_nothing_but_a_scan_of_an_ordinary_body() -> None:
    from symbiote.http.envelope import refused

    ordinary = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "ping", "params": {"x": "\\u00e9 id"}}).encode()
    assert refused(ordinary) is None
    assert refused(b"{not json \\ud800") is None  # not JSON: the wire's own parse error answers it
