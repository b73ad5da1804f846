"""Hostile files imported through the console of a real server, while the owner asks `/health`.

    .venv/bin/python benchmarks/hostile_imports.py [--seconds 60] [--only view,newlines]

For each file (made here, each small or built to look harmless: docs/security.md, issue 49) a
fresh `symbiote serve` on a temporary store receives it as the console's page sends it, starts the
import and waits for its end (at most `--seconds`); meanwhile `/health` is asked every 50 ms (each
with a 5 s timeout) and the server's RSS sampled. Printed per file: how the import ended, how long
it took, the slowest `/health`, the server's RSS growth at its highest, and whether SIGTERM then
stopped the server (or it had to be killed). To measure another version of the code, put its
`symbiote` package first on the path: `PYTHONPATH=/path/to/old/checkout .venv/bin/python
benchmarks/hostile_imports.py`.
"""

from __future__ import annotations

import argparse
import io
import json
import re
import sqlite3
import subprocess
import tempfile
import threading
import time
import zipfile
from pathlib import Path

import httpx
from server_process import TempServer

PART = 2 * 1024 * 1024


def _database(schema: str) -> bytes:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "file.db"
        db = sqlite3.connect(path)
        db.executescript(schema)
        db.commit()
        db.close()
        return path.read_bytes()


def _zip(entries: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in entries.items():
            archive.writestr(name, content)
    return buffer.getvalue()


def _export(entries: list[object] | bytes) -> bytes:
    if isinstance(entries, bytes):
        return b'{"export_metadata": {}, "memories": [' + entries + b"]}"
    return json.dumps({"export_metadata": {"source": "bench"}, "memories": entries}).encode()


def files() -> dict[str, bytes]:
    return {
        "view": _database(
            "CREATE VIEW memories AS WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) "
            "SELECT n AS id, 'x' AS content, 'abcdef01' AS content_hash, '' AS tags, 'note' AS memory_type, "
            "1700000000.0 AS created_at, 1700000000.0 AS updated_at, NULL AS deleted_at FROM r;"
        ),
        "printf-rows": _database(  # 500 rows of 4 MB each, built by the query (the probe's)
            "CREATE TABLE seeds (n INTEGER); CREATE VIEW memories AS SELECT n AS id, "
            "printf('%.*c', 4000000, 'x') AS content, printf('%064d', n) AS content_hash, '' AS tags, "
            "'note' AS memory_type, 1700000000.0 + n AS created_at, 1700000000.0 + n AS updated_at, "
            "NULL AS deleted_at FROM (WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c LIMIT 500) "
            "SELECT n FROM c);"
        ),
        "newlines": _zip({"note.md": b"---" + b"\n" * (4 * 1024 * 1024 - 8)}),  # just under the 4 MiB a note may be
        "tags-100k": _export(
            [
                {
                    "content": "A memory with a hundred thousand tags.",
                    "content_hash": "ab" * 32,
                    "tags": [f"t{i}" for i in range(100_000)],
                    "created_at": 1_700_000_000.0,
                }
            ]
        ),
        "empty-objects-32MiB": _export(b"{}," * (32 * 1024 * 1024 // 3) + b"{}"),
        "zip-300k-entries": _many_entries(300_000),
    }


def _many_entries(count: int) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for i in range(count):
            archive.writestr(f"{i}.md", b"")
    return buffer.getvalue()


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class Watch(threading.Thread):
    """`/health` every 50 ms and the server's RSS, until stopped."""

    def __init__(self, url: str, pid: int) -> None:
        super().__init__(daemon=True)
        self.url, self.pid = url, pid
        self.slowest = 0.0
        self.base = rss_mib(pid)
        self.peak = self.base
        self.done = threading.Event()

    def run(self) -> None:
        with httpx.Client(timeout=5) as http:
            while not self.done.is_set():
                started = time.monotonic()
                try:
                    http.get(self.url + "/health")
                except httpx.HTTPError:
                    pass
                self.slowest = max(self.slowest, time.monotonic() - started)
                self.peak = max(self.peak, rss_mib(self.pid))
                time.sleep(0.05)


def measure(name: str, data: bytes, seconds: float) -> str:
    with TempServer() as server:
        assert server.proc is not None
        http = httpx.Client(base_url=server.url + "/console", timeout=seconds)
        page = http.get("/transfer").text
        csrf = {"X-CSRF-Token": page.split('name="csrf-token" content="')[1].split('"')[0]}
        job = http.post("/import", headers=csrf).json()["job"]
        for start in range(0, len(data), PART):
            http.post(f"/import/{job}/part", content=data[start : start + PART], headers=csrf)
        watch = Watch(server.url, server.proc.pid)
        watch.start()
        started = time.monotonic()
        outcome = "still running"
        try:
            http.post(f"/import/{job}/start?dry_run=0", headers=csrf)
            while time.monotonic() - started < seconds:
                try:
                    status = http.get(f"/import/{job}", timeout=5).text
                except httpx.HTTPError:
                    time.sleep(0.5)
                    continue
                state = re.search(r'data-state="(\w+)"', status)
                if state and state.group(1) in ("done", "failed"):
                    said = re.search(r'role="(?:alert|status)">([^<]*)<', status)
                    outcome = f"{state.group(1)}: {said.group(1)[:90] if said else ''}"
                    break
                time.sleep(0.2)
        finally:
            took = time.monotonic() - started
            watch.done.set()
            watch.join()
        stopped = server.proc.poll() is None
        try:
            code = server.proc.wait(timeout=0) if not stopped else None
        except subprocess.TimeoutExpired:
            code = None
        term = server.stop(timeout=20)
        ended = "SIGTERM ok" if term is not None else "SIGTERM ignored, killed"
        if code is not None:
            ended = f"exited {code}"
    return (
        f"{name:22} {len(data) / 1024:10,.0f} KiB  {took:7.1f} s  /health max {watch.slowest * 1000:7,.0f} ms  "
        f"RSS +{watch.peak - watch.base:6,.0f} MiB  {ended:24} {outcome}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="longest wait for one import")
    parser.add_argument("--only", default="", help="comma-separated names of the files to import")
    args = parser.parse_args()
    wanted = {name for name in args.only.split(",") if name}
    for name, data in files().items():
        if not wanted or name in wanted:
            print(measure(name, data, args.seconds), flush=True)


if __name__ == "__main__":
    main()
