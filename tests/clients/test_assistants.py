"""The two command-line assistants people add Symbiote to, Claude Code and Gemini CLI: their `mcp list`
(which connects to every configured server) with no auth, an API key (streamable HTTP and SSE) and
OAuth (streamable HTTP and SSE, where they must find the sign-in). Their installs are large (about
480 MB together), so they run only under `--soak` (scripts/test.sh --soak), installed on first use
into .venv-tools/assistants at the versions pinned here."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.clients.conftest import TOOLS, MatrixServer, node
from tests.conftest import ServerProcess

pytestmark = [  # the assistants' installs are large
    pytest.mark.server("the assistants are client programs that need a URL"),
    pytest.mark.soak_only,
]

ASSISTANTS = TOOLS / "assistants"
PINNED = {"@anthropic-ai/claude-code": "2.1.332", "@google/gemini-cli": "0.61.0"}
LISTED = re.compile(r"^\W*(\S+): (\S+) \((\w+)\) - (.+)$")


def installed(package: str) -> str | None:
    manifest = ASSISTANTS / "node_modules" / package / "package.json"
    return str(json.loads(manifest.read_text())["version"]) if manifest.exists() else None


@pytest.fixture(scope="module")
def assistants() -> Path:
    """.venv-tools/assistants with both pinned, installed when a version differs (about a minute)."""
    if any(installed(package) != version for package, version in PINNED.items()):
        specs = [f"{package}@{version}" for package, version in PINNED.items()]
        subprocess.run(
            ["npm", "install", "--prefix", str(ASSISTANTS), "--no-save", "--no-audit", "--no-fund", *specs],
            check=True,
            capture_output=True,
            timeout=600,
        )
    return ASSISTANTS / "node_modules" / ".bin"


@pytest.fixture(scope="module")
def open_server(tmp_path_factory: pytest.TempPathFactory, model_dir: Path) -> Iterator[ServerProcess]:
    """A server without authentication (SYMBIOTE_AUTH=none, on loopback)."""
    process = ServerProcess(tmp_path_factory.mktemp("open") / "data", env={"SYMBIOTE_AUTH": "none"}).start()
    yield process
    process.stop()


def servers(open_server: ServerProcess, matrix_server: MatrixServer) -> dict[str, tuple[str, str, str | None]]:
    """The configurations each assistant lists: name -> (transport, URL, API key or None)."""
    key = matrix_server.api_key
    return {
        "open": ("http", open_server.mcp_url, None),
        "key-http": ("http", matrix_server.mcp_url, key),
        "key-sse": ("sse", matrix_server.sse_url, key),
        "oauth-http": ("http", matrix_server.mcp_url, None),
        "oauth-sse": ("sse", matrix_server.sse_url, None),
    }


def listed(output: str) -> dict[str, str]:
    """`mcp list`'s lines as name -> status."""
    return {found[1]: found[4] for line in output.splitlines() if (found := LISTED.match(line.strip()))}


def run(command: list[str], home: Path) -> str:
    env = {
        **os.environ,
        "HOME": str(home),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
    }
    done = subprocess.run(command, cwd=home, env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:] or done.stdout[-2000:]
    return done.stdout + done.stderr  # Gemini CLI writes its list to stderr


def test_claude_code_lists_symbiote_with_every_kind_of_auth(
    assistants: Path, open_server: ServerProcess, matrix_server: MatrixServer, tmp_path: Path
) -> None:
    claude = [str(assistants / "claude")]
    assert "2.1.332" in run([*claude, "--version"], tmp_path)
    for name, (transport, url, key) in servers(open_server, matrix_server).items():
        header = ["--header", f"Authorization: Bearer {key}"] if key else []
        run([*claude, "mcp", "add", "-s", "user", "--transport", transport, name, url, *header], tmp_path)
    statuses = listed(run([*claude, "mcp", "list"], tmp_path))
    assert statuses == {
        "open": "✔ Connected",
        "key-http": "✔ Connected",
        "key-sse": "✔ Connected",
        "oauth-http": "! Needs authentication",
        "oauth-sse": "! Needs authentication",
    }, statuses


def test_gemini_cli_lists_symbiote_with_every_kind_of_auth(
    assistants: Path, open_server: ServerProcess, matrix_server: MatrixServer, tmp_path: Path
) -> None:
    """Gemini CLI's `mcp list` connects with what is configured and does not sign in: an OAuth server
    stays Disconnected there until `/mcp auth` in a session."""
    gemini = [node(), str((assistants / "gemini").resolve())]
    assert "0.61.0" in run([*gemini, "--version"], tmp_path)
    (tmp_path / ".gemini").mkdir(exist_ok=True)
    (tmp_path / ".gemini" / "trustedFolders.json").write_text(json.dumps({str(tmp_path): "TRUST_FOLDER"}))
    for name, (transport, url, key) in servers(open_server, matrix_server).items():
        header = ["-H", f"Authorization: Bearer {key}"] if key else []
        run([*gemini, "mcp", "add", "-s", "user", "-t", transport, name, url, *header], tmp_path)
    statuses = listed(run([*gemini, "mcp", "list"], tmp_path))
    assert statuses == {
        "open": "Connected",
        "key-http": "Connected",
        "key-sse": "Connected",
        "oauth-http": "Disconnected",
        "oauth-sse": "Disconnected",
    }, statuses
