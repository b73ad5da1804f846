"""`symbiote stdio` as a real child process on real pipes, for the stdio handshake's tests: a gate (a
test-only import hook given to the child through PYTHONPATH) can hold back its import of
`symbiote.runtime`, so that "answered before the SDK was loaded" is certain, not a matter of timing."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from tests.conftest import MODEL_DIR

GATE_HOOK = """
import os, sys, time

class _Gate:
    def find_spec(self, name, path=None, target=None):
        if name == "symbiote.runtime":
            while not os.path.exists(os.environ["SYMBIOTE_TEST_GATE"]):
                time.sleep(0.02)
        return None

if os.environ.get("SYMBIOTE_TEST_GATE"):
    sys.meta_path.insert(0, _Gate())
"""


class StdioProcess:
    """`symbiote stdio` as Claude Desktop runs it: a child process, JSON-RPC lines on its pipes."""

    def __init__(self, data_dir: Path, gate: Path | None = None, env: dict[str, str] | None = None) -> None:
        self.env = {
            **os.environ,
            "CHROMADB_PATH": str(data_dir),
            "SYMBIOTE_MODEL_DIR": str(MODEL_DIR),
            "HF_HUB_OFFLINE": "1",
            **(env or {}),
        }
        if gate is not None:
            hook = gate.parent / "hook"
            hook.mkdir(exist_ok=True)
            (hook / "sitecustomize.py").write_text(GATE_HOOK, encoding="utf-8")
            self.env["PYTHONPATH"] = os.pathsep.join([str(hook), *filter(None, [os.environ.get("PYTHONPATH")])])
            self.env["SYMBIOTE_TEST_GATE"] = str(gate)
        self.lines: queue.Queue[dict[str, Any]] = queue.Queue()
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> StdioProcess:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "symbiote", "stdio"],
            env=self.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        threading.Thread(target=self._read, daemon=True).start()
        return self

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(json.loads(line))

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def receive(self, timeout: float = 60) -> dict[str, Any]:
        return self.lines.get(timeout=timeout)

    def ask(self, messages: list[dict[str, Any]]) -> dict[int | str, dict[str, Any]]:
        """Send `messages`, return the replies by id (one per request)."""
        for message in messages:
            self.send(message)
        wanted = {message["id"] for message in messages if "id" in message}
        replies: dict[int | str, dict[str, Any]] = {}
        while set(replies) != wanted:
            reply = self.receive()
            assert reply["id"] not in replies, f"two replies to {reply['id']}"
            replies[reply["id"]] = reply
        return replies

    def stop(self) -> tuple[int, str]:
        """Close stdin, as Claude Desktop does, and return the exit code and stderr."""
        assert self.proc is not None and self.proc.stdin is not None and self.proc.stderr is not None
        self.proc.stdin.close()
        try:
            code = self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        return code, self.proc.stderr.read().decode(errors="replace")
