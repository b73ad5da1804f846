"""fastmcp's Client (tests/clients/requirements.txt) through the scenario: streamable HTTP with the
2026-07-28 protocol (its default, `auto`, negotiates it) or the 2025-11-25 handshake (`legacy`),
or legacy SSE."""

from __future__ import annotations

from importlib.metadata import version
from typing import Any

from fastmcp import Client
from fastmcp.client.transports import SSETransport, StreamableHttpTransport
from scenario import Client as Adapted
from scenario import run, session


async def main(options: dict[str, Any]) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {options['key']}"} if options["key"] else None
    if options["transport"] == "sse":
        transport: Any = SSETransport(options["url"], headers=headers)
    else:
        transport = StreamableHttpTransport(options["url"], headers=headers)
    async with Client(transport, mode=options.get("mode", "auto"), timeout=60) as client:

        async def list_tools() -> list[tuple[str, dict[str, Any]]]:
            return [(tool.name, tool.inputSchema) for tool in await client.list_tools()]

        async def call(name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
            result = await client.call_tool_mcp(name, arguments)
            return bool(result.isError), "".join(getattr(part, "text", "") for part in result.content)

        async def prompt(name: str) -> str:
            got = await client.get_prompt(name)
            return "".join(getattr(message.content, "text", "") for message in got.messages)

        return await session(
            Adapted(list_tools, call, prompt),
            options["fact"],
            options["question"],
            client="fastmcp",
            version=version("fastmcp"),
            protocol=client.protocol_version,
        )


if __name__ == "__main__":
    run(main)
