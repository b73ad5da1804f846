"""Pydantic AI's MCPToolset (pydantic-ai-slim[mcp]) through the scenario: its tool definitions, a
call as its agent makes one (a tool error becomes the ModelRetry the model reads), its prompt."""

from __future__ import annotations

import json
from importlib.metadata import version
from typing import Any

from fastmcp.client.transports import SSETransport, StreamableHttpTransport
from pydantic_ai.exceptions import ModelRetry
from pydantic_ai.mcp import MCPToolset
from scenario import Client as Adapted
from scenario import run, session


async def main(options: dict[str, Any]) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {options['key']}"} if options["key"] else None
    kind = SSETransport if options["transport"] == "sse" else StreamableHttpTransport
    toolset: MCPToolset[None] = MCPToolset(kind(options["url"], headers=headers))
    async with toolset:

        async def list_tools() -> list[tuple[str, dict[str, Any]]]:
            return [(tool.name, tool.inputSchema) for tool in await toolset.list_tools()]

        async def call(name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
            try:
                result = await toolset.direct_call_tool(name, arguments)
            except ModelRetry as retry:
                return True, str(retry)
            return False, result if isinstance(result, str) else json.dumps(result, default=str)

        async def prompt(name: str) -> str:
            got = await toolset.get_prompt(name)
            return "".join(str(getattr(message.content, "content", message.content)) for message in got.messages)

        return await session(
            Adapted(list_tools, call, prompt),
            options["fact"],
            options["question"],
            client="pydantic-ai",
            version=version("pydantic-ai-slim"),
        )


if __name__ == "__main__":
    run(main)
