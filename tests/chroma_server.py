"""A real Chroma server for tests (`chroma run` from the chromadb package), and the store backends.

One server is started per test session, on a free loopback port, the first time a test asks for
it; each test that needs an empty store gets a database of its own on it (CHROMA_DATABASE), so
tests stay independent without a server start each (~1-2 s).
"""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from symbiote.config import Settings
from tests.conftest import MODEL_DIR, free_port


def chroma_executable() -> str:
    beside = Path(sys.executable).with_name("chroma")
    found = str(beside) if beside.exists() else shutil.which("chroma")
    if not found:
        raise RuntimeError("the `chroma` command (from the chromadb package) is not installed")
    return found


class ChromaServerProcess:
    """`chroma run --path DIR --host 127.0.0.1 --port N` as a child process."""

    def __init__(self, path: Path, port: int | None = None) -> None:
        self.path = path
        self.port = port or free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = path.parent / f"chroma-{self.port}.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ChromaServerProcess:
        self._log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            [chroma_executable(), "run", "--path", str(self.path), "--host", "127.0.0.1", "--port", str(self.port)],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=_chromas_own_environment(),
        )
        deadline = time.monotonic() + 30
        with httpx.Client(timeout=1) as client:  # one client: each new one loads the CA bundle again
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"chroma exited with {self.proc.returncode}:\n{self.log()}")
                try:
                    if client.get(f"{self.url}/api/v2/heartbeat").status_code == 200:
                        return self
                except httpx.HTTPError:
                    pass
                time.sleep(0.05)
        raise RuntimeError(f"chroma did not answer its heartbeat:\n{self.log()}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc is not None:
            self._log.close()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


_shared: ChromaServerProcess | None = None


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServerProcess]:
    """The session's Chroma server (started once however many modules import this fixture)."""
    global _shared
    owner = _shared is None
    if owner:
        _shared = ChromaServerProcess(tmp_path_factory.mktemp("chroma-server") / "db").start()
    yield _shared
    if owner:
        _shared.stop()
        _shared = None


_counter = itertools.count()


@dataclass
class Backend:
    """How to open a fresh, empty store on one backend: `settings()` gives Settings for it."""

    kind: str  # "embedded" | "server"
    root: Path
    server: ChromaServerProcess | None = None

    def settings(self, database: str | None = None, **overrides: Any) -> Settings:
        n = next(_counter)
        base = Settings(chromadb_path=self.root / f"data-{n}", model_dir=MODEL_DIR)
        if self.server is not None:
            base = replace(
                base,
                chroma_host="127.0.0.1",
                chroma_port=self.server.port,
                chroma_database=database or f"test-{uuid.uuid4().hex[:12]}",
            )
        return replace(base, **overrides)


@pytest.fixture(params=["embedded", pytest.param("server", marks=pytest.mark.server)])  # the quick tier: embedded only
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    if request.param == "server":
        return Backend("server", tmp_path, request.getfixturevalue("chroma_server"))
    return Backend("embedded", tmp_path)


def _chromas_own_environment() -> dict[str, str]:
    """Chroma's server runs none of our code: coverage's start in every Python process
    (`patch = ["subprocess"]`) would only slow it, so its variables are left out."""
    return {
        **{k: v for k, v in os.environ.items() if k not in ("COVERAGE_PROCESS_START", "COVERAGE_PROCESS_CONFIG")},
        "ANONYMIZED_TELEMETRY": "False",
    }
