"""The command line: stdio for Claude Desktop, and configuration mistakes caught before serving."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from tests.conftest import MODEL_DIR

pytestmark = pytest.mark.server("the process is the point: the command's exit codes, and stdio over a child's pipes")


def run_cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "symbiote", *args], env={**os.environ, **env}, capture_output=True, text=True, timeout=60
    )


def test_invalid_configuration_exits_non_zero_naming_every_problem(tmp_path: Path) -> None:
    result = run_cli("serve", env={"PORT": "eighty", "LOG_LEVEL": "LOUD", "CHROMADB_PATH": str(tmp_path)})
    assert result.returncode == 2
    assert "PORT='eighty'" in result.stderr and "LOG_LEVEL='LOUD'" in result.stderr
    assert "Traceback" not in result.stderr


async def test_stdio_transport_stores_and_searches(tmp_path: Path, model_dir: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "symbiote", "stdio"],
        env={
            **os.environ,
            "CHROMADB_PATH": str(tmp_path / "data"),
            "SYMBIOTE_MODEL_DIR": str(MODEL_DIR),
            "HF_HUB_OFFLINE": "1",
        },
    )
    async with Client(params) as client:
        stored = await client.call_tool("store_memory", {"content": "Claude Desktop talks to us over stdio"})
        found = await client.call_tool("search_memory", {"query": "how does Claude Desktop connect?"})
        tools = await client.list_tools()
    assert not stored.is_error and not found.is_error
    assert found.structured_content["results"][0]["memory_id"] == stored.structured_content["memory_id"]
    assert len(tools.tools) >= 6


def test_reset_needs_confirmation_and_keeps_the_old_store(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "chroma.sqlite3").write_bytes(b"old memories")
    refused = run_cli("reset", env={"CHROMADB_PATH": str(data)})
    assert refused.returncode == 2 and "--confirm" in refused.stderr
    assert (data / "chroma.sqlite3").exists()
    done = run_cli("reset", "--confirm", env={"CHROMADB_PATH": str(data)})
    assert done.returncode == 0, done.stderr
    kept = list(tmp_path.glob("data.reset-*"))
    assert len(kept) == 1 and (kept[0] / "chroma.sqlite3").read_bytes() == b"old memories"
    assert data.is_dir() and not any(data.iterdir())
