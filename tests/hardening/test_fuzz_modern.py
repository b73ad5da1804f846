"""A fuzz of the 2026-07-28 wire beside the legacy one in test_fuzz.py (issue 58): every tool, every
field, given text that is not Unicode (a lone surrogate, as JSON's escape) and the seeded hostile
values of `Inputs`. The real app in-process (httpx's ASGI transport) on the real store and model.

Each answer must be a JSON-RPC result or a worded refusal: no 5xx, no -32603, no tool's "Internal
error", and every field holding a lone surrogate refused with -32602 naming it before anything is
acknowledged. Then the store opens again and everything acknowledged is there and exportable."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

from symbiote.config import Settings
from symbiote.transfer import export_lines
from tests.conftest import make_app
from tests.hardening.test_fuzz import Inputs

MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
RANDOM_CALLS = 600


def headers(method: str, name: str | None = None) -> dict[str, str]:
    found = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": method,
    }
    return found | ({"Mcp-Name": name} if name is not None else {})


def body(tool: str, arguments: Any, request_id: int) -> bytes:
    """The call as JSON, ASCII-escaped: a lone surrogate goes out as `\\udXXX`, as a client writes it."""
    message = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments, "_meta": META},
    }
    return json.dumps(message).encode()


def text_fields(schema: dict[str, Any], path: str = "") -> list[tuple[str, Any]]:
    """Every place a string goes in a tool's arguments: (path, a setter's key path as a list)."""
    found: list[tuple[str, Any]] = []
    for name, spec in schema.get("properties", {}).items():
        kinds = {spec.get("type"), *(option.get("type") for option in spec.get("anyOf", []))}
        items = spec.get("items") or next((o.get("items") for o in spec.get("anyOf", []) if o.get("items")), None)
        if "string" in kinds:
            found.append((f"{path}{name}", [name]))
        if "array" in kinds and items is not None:
            if items.get("type") == "string" or "string" in {o.get("type") for o in items.get("anyOf", [])}:
                found.append((f"{path}{name}[0]", [name, 0]))
            for inner, keys in text_fields(items, f"{path}{name}[0]."):
                found.append((inner, [name, 0, *keys]))
    return found


def valid(tool: str, schema: dict[str, Any]) -> dict[str, Any]:
    """Arguments a call would accept, where a field is then replaced by text that is not Unicode."""
    arguments: dict[str, Any] = {}
    for name, spec in schema.get("properties", {}).items():
        kinds = {spec.get("type"), *(option.get("type") for option in spec.get("anyOf", []))}
        if name.endswith("memory_id") or name == "id":
            arguments[name] = "mem_17961569649291019792"
        elif name == "memory_ids" or name == "replaces":
            arguments[name] = ["mem_17961569649291019792"]
        elif name == "memories":
            arguments[name] = [{"content": "a fact", "tags": ["t"], "conversation_id": "c", "type": "fact"}]
        elif name == "role":
            arguments[name] = "user"
        elif "array" in kinds:
            arguments[name] = ["t"]
        elif "string" in kinds:
            arguments[name] = "text"
    return arguments


def put(arguments: dict[str, Any], keys: list[Any], value: str) -> dict[str, Any]:
    changed = json.loads(json.dumps(arguments))
    target: Any = changed
    for key in keys[:-1]:
        if isinstance(key, int):
            while len(target) <= key:
                target.append({})
        elif key not in target or not isinstance(target[key], list | dict):
            target[key] = [] if isinstance(keys[keys.index(key) + 1], int) else {}
        target = target[key]
    if isinstance(target, list):
        while len(target) <= keys[-1]:
            target.append("")
    target[keys[-1]] = value
    return changed


def judged(status: int, answer: dict[str, Any]) -> str:
    """What a call's answer was: a result, a tool error, a refusal; an internal failure fails the test."""
    assert status < 500, answer
    if "error" in answer:
        assert answer["error"]["code"] != -32603, answer
        return f"refused {answer['error']['code']}"
    result = answer["result"]
    text = " ".join(part.get("text", "") for part in result.get("content", []))
    assert "Internal error" not in text and "Check that the disk has space" not in text, text
    return "tool error" if result.get("isError") else "answered"


async def test_every_field_of_every_tool_on_the_2026_07_28_wire(settings: Settings, tmp_path: Path) -> None:
    inputs = Inputs(58)
    seen: Counter[str] = Counter()
    stored: set[str] = set()
    app = make_app(settings)
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as http:
            listing = await http.post(
                "/mcp",
                content=json.dumps({"jsonrpc": "2.0", "id": 0, "method": "tools/list", "params": {"_meta": META}}),
                headers=headers("tools/list"),
            )
            tools = {tool["name"]: tool["inputSchema"] for tool in listing.json()["result"]["tools"]}
            assert len(tools) >= 12
            number = 1
            for tool, schema in sorted(tools.items()):
                for path, keys in text_fields(schema):
                    for bad in ("t\ud800", "\udfff", "x\ud83d y"):
                        number += 1
                        sent = put(valid(tool, schema), keys, bad)
                        answer = await http.post(
                            "/mcp", content=body(tool, sent, number), headers=headers("tools/call", tool)
                        )
                        seen[f"surrogate: {judged(answer.status_code, answer.json())}"] += 1
                        error = answer.json()["error"]
                        assert error["code"] == -32602 and f"params.arguments.{path}" in error["message"], (
                            tool,
                            path,
                            error,
                        )
            names = sorted(tools)
            for _ in range(RANDOM_CALLS):
                number += 1
                tool = inputs.rng.choice(names)
                arguments = inputs.arguments(tools[tool])
                answer = await http.post(
                    "/mcp", content=body(tool, arguments, number), headers=headers("tools/call", tool)
                )
                outcome = judged(answer.status_code, answer.json())
                seen[f"random: {outcome}"] += 1
                content = answer.json().get("result", {}).get("structuredContent") or {}
                if outcome == "answered" and content.get("status") == "stored":
                    stored.add(content["memory_id"])
    print(dict(seen))
    assert seen["surrogate: refused -32602"] > 40 and seen["random: answered"] > 0
    again = make_app(dataclasses.replace(settings))  # the store opens again, everything acknowledged in it
    async with again.router.lifespan_context(again):
        engine = again.state.runtime.engine
        assert (await engine.stats()).total_memories >= len(stored)
        some = sorted(stored)[:100]
        assert not some or [m.memory_id for m in await engine.get_many(some) if m is not None] == some
        lines = [line async for line in export_lines(engine.bulk)]
        assert json.loads(lines[0])["format"] == "symbiote-memories"
