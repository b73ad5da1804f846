"""The OpenAI Agents SDK (openai-agents) through the scenario: its MCPServerStreamableHttp (or
MCPServerSse), and the conversion an agent applies to every tool with strict schemas on: a tool
whose input schema its converter refuses is sent to the model non-strict, silently (a log line at
INFO), so the driver reports each such tool and why."""

from __future__ import annotations

import copy
from importlib.metadata import version
from typing import Any

from agents.mcp import MCPServerSse, MCPServerStreamableHttp, MCPUtil
from agents.strict_schema import ensure_strict_json_schema
from scenario import Client as Adapted
from scenario import run, session


def not_strict(server: Any, tools: list[Any]) -> dict[str, str]:
    """Each tool the Agents SDK would not make strict, with its converter's reason."""
    refused: dict[str, str] = {}
    for tool in tools:
        if MCPUtil.to_function_tool(tool, server, convert_schemas_to_strict=True).strict_json_schema:
            continue
        schema = copy.deepcopy(tool.input_schema)
        schema.setdefault("properties", {})
        try:
            ensure_strict_json_schema(schema, _reject_open_objects=tool.input_schema != {})
            refused[tool.name] = "converted, yet not strict"
        except Exception as exc:  # noqa: BLE001 (the converter's reason, which the SDK only logs)
            refused[tool.name] = f"{type(exc).__name__}: {exc}"
    return refused


async def main(options: dict[str, Any]) -> dict[str, Any]:
    params: dict[str, Any] = {"url": options["url"], "timeout": 60}
    if options["key"]:
        params["headers"] = {"Authorization": f"Bearer {options['key']}"}
    kind = MCPServerSse if options["transport"] == "sse" else MCPServerStreamableHttp
    server: Any = kind(params, name="symbiote", client_session_timeout_seconds=60)
    await server.connect()
    try:
        listed = await server.list_tools()

        async def list_tools() -> list[tuple[str, dict[str, Any]]]:
            return [(tool.name, tool.input_schema) for tool in listed]

        async def call(name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
            result = await server.call_tool(name, arguments)
            return bool(result.is_error), "".join(getattr(part, "text", "") for part in result.content)

        async def prompt(name: str) -> str:
            got = await server.get_prompt(name)
            return "".join(getattr(message.content, "text", "") for message in got.messages)

        return await session(
            Adapted(list_tools, call, prompt),
            options["fact"],
            options["question"],
            client="openai-agents",
            version=version("openai-agents"),
            not_strict=not_strict(server, listed),
        )
    finally:
        await server.cleanup()


if __name__ == "__main__":
    run(main)
