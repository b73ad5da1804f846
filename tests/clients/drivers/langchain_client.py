"""langchain-mcp-adapters (in its own .venv-clients/langchain: it needs the MCP SDK 1.x) through the
scenario: MultiServerMCPClient's tools, called as an agent calls them (a tool call in, a ToolMessage
out, a tool error as a message with status "error"), and its prompt loader."""

from __future__ import annotations

from importlib.metadata import version
from typing import Any

from langchain_mcp_adapters.client import MultiServerMCPClient
from scenario import Client as Adapted
from scenario import run, session


def text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(block.get("text", "") if isinstance(block, dict) else str(block) for block in content)


async def main(options: dict[str, Any]) -> dict[str, Any]:
    connection: dict[str, Any] = {
        "transport": "sse" if options["transport"] == "sse" else "streamable_http",
        "url": options["url"],
    }
    if options["key"]:
        connection["headers"] = {"Authorization": f"Bearer {options['key']}"}
    client = MultiServerMCPClient({"symbiote": connection})
    tools = {tool.name: tool for tool in await client.get_tools()}

    async def list_tools() -> list[tuple[str, dict[str, Any]]]:
        return [
            (name, dict(tool.args_schema) if isinstance(tool.args_schema, dict) else {}) for name, tool in tools.items()
        ]

    async def call(name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
        message = await tools[name].ainvoke({"type": "tool_call", "id": "1", "name": name, "args": arguments})
        return message.status == "error", text_of(message.content)

    async def prompt(name: str) -> str:
        return "".join(text_of(message.content) for message in await client.get_prompt("symbiote", name))

    return await session(
        Adapted(list_tools, call, prompt),
        options["fact"],
        options["question"],
        client="langchain-mcp-adapters",
        version=version("langchain-mcp-adapters"),
    )


if __name__ == "__main__":
    run(main)
