"""The Python MCP clients people build agents with, each through the whole session (connect, list,
store, search, the prompt, a bad argument) against a real `symbiote serve` with an API key: fastmcp
on both protocol versions and legacy SSE, the OpenAI Agents SDK (and its strict-schema conversion),
Pydantic AI's MCPToolset, langchain-mcp-adapters over streamable HTTP and SSE."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from tests.clients.conftest import FACTS, MatrixServer, assert_session, finish_driver, start_driver, stop_drivers

pytestmark = pytest.mark.server("the clients are programs of their own that need a URL")

# Each run: (its virtualenv, its driver, its transport, more options). All start at once (each waits
# on the server more than it computes) and each test reads its own.
RUNS: dict[str, tuple[str, str, str, dict[str, Any]]] = {
    "fastmcp 2026-07-28": ("main", "fastmcp_client.py", "http", {"mode": "auto"}),
    "fastmcp 2025-11-25": ("main", "fastmcp_client.py", "http", {"mode": "legacy"}),
    "fastmcp sse": ("main", "fastmcp_client.py", "sse", {"mode": "legacy"}),
    "openai-agents": ("main", "openai_agents_client.py", "http", {}),
    "pydantic-ai": ("main", "pydantic_ai_client.py", "http", {}),
    "langchain": ("langchain", "langchain_client.py", "http", {}),
    "langchain sse": ("langchain", "langchain_client.py", "sse", {}),
}


@pytest.fixture(scope="module")
def drivers(matrix_server: MatrixServer) -> Iterator[dict[str, subprocess.Popen[str]]]:
    """Every run of the module, started together (any still running at the end is stopped)."""
    started = {}
    for name, (venv, driver, transport, options) in RUNS.items():
        url = matrix_server.sse_url if transport == "sse" else matrix_server.mcp_url
        fact, question = FACTS[name]
        started[name] = start_driver(
            venv,
            driver,
            url=url,
            key=matrix_server.api_key,
            transport=transport,
            fact=fact,
            question=question,
            **options,
        )
    yield started
    stop_drivers(started.values())


def test_fastmcp_on_the_2026_07_28_protocol(drivers: dict[str, subprocess.Popen[str]]) -> None:
    result = finish_driver(drivers["fastmcp 2026-07-28"])
    assert (result["client"], result["version"], result["protocol"]) == ("fastmcp", "4.1.6", "2026-07-28")
    assert_session(result)


def test_fastmcp_on_the_2025_11_25_handshake(drivers: dict[str, subprocess.Popen[str]]) -> None:
    result = finish_driver(drivers["fastmcp 2025-11-25"])
    assert (result["version"], result["protocol"]) == ("4.1.6", "2025-11-25")
    assert_session(result)


def test_fastmcp_over_legacy_sse(drivers: dict[str, subprocess.Popen[str]]) -> None:
    result = finish_driver(drivers["fastmcp sse"])
    assert result["version"] == "4.1.6"
    assert_session(result)


def test_openai_agents_and_every_tool_strict(drivers: dict[str, subprocess.Popen[str]]) -> None:
    """The Agents SDK sends a tool whose schema it cannot make strict to the model non-strict, with
    no more than a log line: every tool must convert."""
    result = finish_driver(drivers["openai-agents"])
    assert (result["client"], result["version"]) == ("openai-agents", "0.24.0")
    assert_session(result)
    assert result["not_strict"] == {}


def test_pydantic_ai_mcp_toolset(drivers: dict[str, subprocess.Popen[str]]) -> None:
    result = finish_driver(drivers["pydantic-ai"])
    assert (result["client"], result["version"]) == ("pydantic-ai", "2.78.0")
    assert_session(result)


def test_langchain_mcp_adapters(drivers: dict[str, subprocess.Popen[str]]) -> None:
    result = finish_driver(drivers["langchain"])
    assert (result["client"], result["version"]) == ("langchain-mcp-adapters", "0.3.2")
    assert_session(result)


def test_langchain_mcp_adapters_over_legacy_sse(drivers: dict[str, subprocess.Popen[str]]) -> None:
    result = finish_driver(drivers["langchain sse"])
    assert result["version"] == "0.3.2"
    assert_session(result)
