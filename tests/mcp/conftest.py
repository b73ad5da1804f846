"""The MCP package's shared server with every tool it can publish."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ServerProcess


@pytest.fixture(scope="package")
def chatgpt_server(tmp_path_factory: pytest.TempPathFactory, model_dir: Path) -> Iterator[ServerProcess]:
    """A server with ChatGPT's `search` and `fetch` too, so every tool the server can publish: one
    for the package's tests that need a process (they add memories and look for what they added, or
    call a tool that changes nothing)."""
    proc = ServerProcess(tmp_path_factory.mktemp("chatgpt") / "data", env={"SYMBIOTE_CHATGPT_TOOLS": "on"}).start()
    yield proc
    proc.stop()
