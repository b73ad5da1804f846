"""`symbiote stdio` (Claude Desktop's way in): process start to `initialize`, `tools/list` and the
first answered `search_memory`, over the process's real stdin and stdout.

Usage: .venv/bin/python benchmarks/stdio_start.py [--runs 9] [--data DIR]
Writes JSON-RPC lines the way Claude Desktop does: `initialize` at once, then
`notifications/initialized`, `tools/list` and a `tools/call`. Prints per-run figures and medians.
The first start on a data directory has no stdio handshake cache yet and is printed on its own;
it stays up until the server has recorded the cache.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from server_process import ROOT, symbiote_command  # this directory is on sys.path when run as a script

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "claude-ai", "version": "0.1.0"},
    },
}


def one_run(data: Path, linger: bool = False) -> tuple[float, float, float]:
    env = {
        **os.environ,
        "CHROMADB_PATH": str(data.absolute()),
        "HF_HUB_OFFLINE": "1",
        "LOG_LEVEL": "WARNING",
        "XDG_CACHE_HOME": str(data.parent.absolute() / "user-cache"),
    }  # the first start really has no cache
    cmd = [*symbiote_command(), "stdio"]
    started = time.perf_counter()
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert proc.stdin is not None and proc.stdout is not None

    def send(message: dict[str, object]) -> None:
        proc.stdin.write(json.dumps(message).encode() + b"\n")  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]

    def reply(request_id: int) -> dict[str, object]:
        while True:
            line = proc.stdout.readline()  # type: ignore[union-attr]
            if not line:
                raise RuntimeError("symbiote stdio closed its stdout")
            message = json.loads(line)
            if message.get("id") == request_id:
                return message

    try:
        send(INITIALIZE)
        assert "result" in reply(0)
        initialized = time.perf_counter() - started
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})
        assert "result" in reply(1)
        listed = time.perf_counter() - started
        send(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "search_memory", "arguments": {"query": "what am I working on?"}},
            }
        )
        result = reply(2)
        assert "result" in result and not result["result"].get("isError"), result  # type: ignore[union-attr]
        searched = time.perf_counter() - started
        deadline = time.monotonic() + 30
        while linger and not (data / "handshake-stdio.json").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return initialized, listed, searched


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--data", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = args.data or Path(tmp) / "data"
        first = one_run(data, linger=True)
        print(
            f"first start (no stdio cache yet): initialize {first[0]:.3f} s, tools/list {first[1]:.3f} s, first search {first[2]:.3f} s"
        )
        runs = []
        for index in range(args.runs):
            runs.append(one_run(data))
            print(
                f"run {index + 1}: initialize {runs[-1][0]:.3f} s, tools/list {runs[-1][1]:.3f} s, first search {runs[-1][2]:.3f} s",
                flush=True,
            )
        medians = [statistics.median(run[i] for run in runs) for i in range(3)]
        print(
            f"median of {len(runs)}: initialize {medians[0]:.3f} s, tools/list {medians[1]:.3f} s, first search {medians[2]:.3f} s"
        )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
