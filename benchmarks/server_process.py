"""`symbiote serve` as a child process on a free loopback port: starting it, waiting for it, stopping it.

Shared by the benchmark scripts that measure the real server over HTTP (each runs as
`python benchmarks/<name>.py`, which puts this directory on sys.path).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Self

import httpx
from ports import free_port

ROOT = Path(__file__).resolve().parent.parent
MODEL_DIR = ROOT / "models" / "all-MiniLM-L6-v2"
SYMBIOTE = ROOT / ".venv" / "bin" / "symbiote"


def symbiote_command() -> list[str]:
    """The project's `symbiote` script, or `python -m symbiote` where the venv has none."""
    return [str(SYMBIOTE)] if SYMBIOTE.exists() else [sys.executable, "-m", "symbiote"]


def stop(proc: subprocess.Popen[bytes], timeout: float = 60.0) -> int | None:
    """SIGTERM and wait; the exit code, or None when it had to be killed."""
    if proc.poll() is not None:
        return proc.returncode
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return None


class ServerProcess:
    """`symbiote serve --port N` on the store in `data`.

    `env`: variables added to this process's environment (CHROMADB_PATH is `data`). `log`: a file
    the server's output is appended to; without one it writes to our stdout, and its stderr goes
    where `stderr` says (default: ours).
    `command`: how to run `symbiote` (default: `symbiote_command()`), in `cwd` (default: the project).
    """

    def __init__(
        self,
        data: Path,
        *,
        port: int | None = None,
        env: dict[str, str] | None = None,
        log: Path | None = None,
        stderr: int | None = None,
        command: list[str] | None = None,
        cwd: Path | str | None = None,
    ) -> None:
        self.data = data
        self.port = port or free_port()
        self.env = env or {}
        self.log_path = log
        self.stderr = stderr
        self.command = command
        self.cwd = cwd or ROOT
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def mcp_url(self) -> str:
        return self.url + "/mcp"

    def launch(self) -> subprocess.Popen[bytes]:
        """Start the process and return at once."""
        env = {**os.environ, "CHROMADB_PATH": str(Path(self.data).absolute()), **self.env}
        cmd = [*(self.command or symbiote_command()), "serve", "--port", str(self.port)]
        if self.log_path is None:
            self.proc = subprocess.Popen(cmd, env=env, cwd=self.cwd, stderr=self.stderr)
        else:
            with self.log_path.open("ab") as log:
                self.proc = subprocess.Popen(cmd, env=env, cwd=self.cwd, stdout=log, stderr=subprocess.STDOUT)
        return self.proc

    def health(self, timeout: float = 30) -> dict[str, Any]:
        return httpx.get(self.url + "/health", timeout=timeout).json()

    def wait_ready(self, started: float, timeout: float = 180.0, store: bool = True) -> float:
        """Wait until /health answers and, with `store`, says the store is ready (or not created yet).

        Returns the seconds since `started` (a time.monotonic()); raises RuntimeError when the
        process exits, the store is unavailable or `timeout` passes first.
        """
        assert self.proc is not None
        health: dict[str, Any] = {}
        while time.monotonic() - started < timeout:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}; see {self.log_path}")
            with contextlib.suppress(httpx.HTTPError, ValueError):
                health = self.health(timeout=5)
                if not store or health.get("store") in ("ready", "not_created"):
                    return time.monotonic() - started
                if health.get("store") == "unavailable":
                    raise RuntimeError(f"store unavailable after restart: {health}")
            time.sleep(0.1)
        raise RuntimeError(f"server not ready within {timeout:.0f} s (last health {health}); see {self.log_path}")

    def start(self, timeout: float = 180.0, store: bool = True) -> float:
        """Launch and wait (see `wait_ready`); the seconds until it was ready."""
        started = time.monotonic()
        self.launch()
        return self.wait_ready(started, timeout, store)

    def stop(self, timeout: float = 60.0) -> int | None:
        """SIGTERM and wait; the exit code (None if it had to be killed or never started)."""
        return None if self.proc is None else stop(self.proc, timeout)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()


class TempServer(ServerProcess):
    """A server on a new temporary store and log, both removed on exit; ready once /health answers."""

    def __init__(self, port: int | None = None, prefix: str = "symbiote-bench-") -> None:
        self.dir = Path(tempfile.mkdtemp(prefix=prefix))
        super().__init__(self.dir / "chroma", port=port, log=self.dir / "server.log")

    def __enter__(self) -> Self:
        try:
            self.start(timeout=120, store=False)
        except RuntimeError as exc:
            tail = self.log_path.read_text(errors="replace")[-3000:] if self.log_path else ""
            self.__exit__()
            raise RuntimeError(f"{exc}\n{tail}") from None
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop(timeout=15)
        shutil.rmtree(self.dir, ignore_errors=True)
