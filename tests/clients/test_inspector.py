"""The MCP Inspector's CLI (the TypeScript SDK's client; the version tests/e2e/conformance pins) through
the whole session over each of the three transports: streamable HTTP and legacy SSE with an API key,
and stdio through `symbiote stdio`. One CLI process per call, as a script would use it."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.clients.conftest import FACTS, INSPECTOR, SETUP_HINT, MatrixServer, assert_session, node
from tests.conftest import MODEL_DIR

pytestmark = pytest.mark.server("the Inspector is a client program that needs a URL or a command to start")


def inspector(target: list[str], *args: str) -> tuple[bool, dict[str, Any] | str]:
    """One CLI call: (it succeeded, its JSON answer or its error). It reads its own package.json
    relative to the working directory, so it runs from its build directory."""
    assert INSPECTOR.exists(), f"the Inspector's CLI is missing: {SETUP_HINT}"
    done = subprocess.run(
        [node(), str(INSPECTOR), *target, *args], cwd=INSPECTOR.parent, capture_output=True, text=True, timeout=120
    )
    if done.returncode != 0:
        return False, (done.stderr.strip() or done.stdout.strip())[-2000:]
    return True, json.loads(done.stdout)


def text_of(answer: dict[str, Any]) -> str:
    return "".join(part.get("text", "") for part in answer.get("content", []))


def session(target: list[str], fact: str, question: str) -> dict[str, Any]:
    """The scenario of tests/clients/drivers/scenario.py, call by call."""
    ok, listed = inspector(target, "--method", "tools/list")
    assert ok and isinstance(listed, dict), listed
    result: dict[str, Any] = {"tools": [tool["name"] for tool in listed["tools"]]}

    def call(tool: str, *arguments: str) -> tuple[bool, str]:
        ok, answer = inspector(target, "--method", "tools/call", "--tool-name", tool, "--tool-arg", *arguments)
        if not ok or not isinstance(answer, dict):
            return True, str(answer)
        return bool(answer.get("isError")), text_of(answer)

    failed, text = call("store_memory", f"content={fact}")
    result["stored"], result["store_error"] = (None, text) if failed else (json.loads(text)["memory_id"], None)
    failed, text = call("search_memory", f"query={question}")
    result["found"] = [] if failed else [hit["memory_id"] for hit in json.loads(text)["results"]]
    result["search_error"] = text if failed else None
    ok, prompt = inspector(target, "--method", "prompts/get", "--prompt-name", "venom_identity")
    assert ok and isinstance(prompt, dict), prompt
    result["prompt"] = "".join(message["content"].get("text", "") for message in prompt["messages"])
    failed, text = call("search_memory", "query=anything", "limit=99")
    result["bad_argument"] = {"is_error": failed, "text": text}
    return result


@pytest.fixture(scope="module")
def sessions(matrix_server: MatrixServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Future[Any]]]:
    """The three transports' sessions, run at once; stdio's on a store of its own (a second process
    must not open the HTTP server's)."""
    bearer = ["--header", f"Authorization: Bearer {matrix_server.api_key}"]
    stdio_home: Path = tmp_path_factory.mktemp("inspector-stdio")
    # The CLI hands its child only a few variables (HOME, PATH...): the store, the model and a cache
    # directory of this test's own (not the user's) are given on the command line.
    stdio = [
        "/usr/bin/env",
        f"CHROMADB_PATH={stdio_home / 'data'}",
        f"XDG_CACHE_HOME={stdio_home / 'cache'}",
        f"SYMBIOTE_MODEL_DIR={MODEL_DIR}",
        "HF_HUB_OFFLINE=1",
        sys.executable,
        "-m",
        "symbiote",
        "stdio",
    ]
    targets = {
        "http": [matrix_server.mcp_url, "--transport", "http", *bearer],
        "sse": [matrix_server.sse_url, "--transport", "sse", *bearer],
        "stdio": ["--transport", "stdio", *stdio],
    }
    with ThreadPoolExecutor(len(targets)) as pool:
        yield {name: pool.submit(session, target, *FACTS[f"inspector {name}"]) for name, target in targets.items()}


def test_the_inspector_over_streamable_http(sessions: dict[str, Future[Any]]) -> None:
    assert_session(sessions["http"].result())


def test_the_inspector_over_legacy_sse(sessions: dict[str, Future[Any]]) -> None:
    assert_session(sessions["sse"].result())


def test_the_inspector_over_stdio(sessions: dict[str, Future[Any]]) -> None:
    assert_session(sessions["stdio"].result())
