"""Issue 49: an import of another program's file stops when asked, leaving whole batches and no
reader behind: the console's Cancel, the server's SIGTERM, Ctrl-C at `symbiote import` (before,
a file that held the event loop made the server ignore SIGTERM and the command ignore Ctrl-C)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from symbiote.config import Settings
from symbiote.runtime import build_runtime
from symbiote.storage import SIDE_DATABASE_FILE
from symbiote.transfer.exporting import export_lines
from symbiote.transfer.importing import BATCH
from tests.conftest import ServerProcess
from tests.transfer.test_hardening import Console

pytestmark = pytest.mark.server(
    "the process is the point: a signal or a cancel stops an import running in the server or the command"
)

# Many short memories: a batch is quick to embed, and the reader's 3.5 MB of lines are twice what the
# pipe and the server's buffer hold (1.8 MB), so it is still running when the import stops.
ENTRIES = 64 * BATCH


def _export(tmp_path: Path) -> Path:
    entries = [
        {
            "content": f"Stop test {i}: the night ferry to island {i} leaves at {i % 24}:15 from quay {i % 7}.",
            "content_hash": f"{i:064x}",
            "tags": ["ferries"],
            "created_at": 1_700_000_000.0 + i,
        }
        for i in range(ENTRIES)
    ]
    path = tmp_path / "export.json"
    path.write_text(json.dumps({"export_metadata": {"source": "test"}, "memories": entries}, indent=2))
    return path


def _readers(pid: int) -> list[int]:
    """The import readers this process started that are still alive."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if int(stat[1]) == pid and b"source_reader" in command and stat[0] != "Z":
            found.append(int(entry.name))
    return found


def _stored(http: httpx.Client) -> int:
    return len(http.get("/export").text.splitlines()) - 1


def _stored_in(data: Path) -> int:
    """Memories a running `symbiote import` has stored, read from the keyword index (written with
    each batch) without opening the store the command holds."""
    try:
        with sqlite3.connect(f"file:{data / SIDE_DATABASE_FILE}?mode=ro", uri=True, timeout=1) as conn:
            return int(conn.execute("SELECT count(*) FROM docs").fetchone()[0])
    except sqlite3.OperationalError:  # not made yet, or its table not yet there
        return 0


def _started(console: Console, data: bytes) -> str:
    job = console.upload(data)
    assert console.http.post(f"/import/{job}/start?dry_run=0", headers=console.csrf).status_code == 200
    return job


def _wait_for_first_batch(http: httpx.Client) -> None:
    deadline = time.monotonic() + 300
    while _stored(http) < BATCH:
        assert time.monotonic() < deadline, "no batch was stored"
        time.sleep(0.3)


def _wait_for_the_end(console: Console, job: str) -> str:
    deadline = time.monotonic() + 180
    while 'data-state="failed"' not in (page := console.http.get(f"/import/{job}").text):
        assert time.monotonic() < deadline, page[-800:]
        time.sleep(0.5)
    return page


def test_cancel_in_the_console_stops_the_import_between_batches(tmp_path: Path, model_dir: Path) -> None:
    server = ServerProcess(tmp_path / "data").start()
    try:
        assert server.proc is not None
        console = Console(server.base_url)
        job = _started(console, _export(tmp_path).read_bytes())
        _wait_for_first_batch(console.http)
        assert _readers(server.proc.pid)  # the cancel has a reader to stop
        page = console.http.get(f"/import/{job}").text
        assert 'id="cancel-import"' in page
        csrf = console.csrf["X-CSRF-Token"]
        cancelled = console.http.post(f"/import/{job}/cancel", data={"csrf": csrf}, follow_redirects=True)
        assert 'data-state="failed"' in cancelled.text or 'id="import-stopping"' in cancelled.text, cancelled.text[
            -800:
        ]
        cancelled = _wait_for_the_end(console, job)  # a loaded machine finishes the batch in hand slowly
        assert "Cancelled" in cancelled, cancelled[-800:]
        assert not _readers(server.proc.pid)
        stored = _stored(console.http)
        time.sleep(2)
        assert _stored(console.http) == stored and stored % BATCH == 0 and stored < ENTRIES, stored
    finally:
        server.stop()


def test_sigterm_stops_the_server_during_an_import(tmp_path: Path, model_dir: Path) -> None:
    server = ServerProcess(tmp_path / "data").start()
    try:
        assert server.proc is not None
        console = Console(server.base_url)
        _started(console, _export(tmp_path).read_bytes())
        readers = set(_readers(server.proc.pid))  # a quick reader may have written the whole file by the first batch
        _wait_for_first_batch(console.http)
        readers |= set(_readers(server.proc.pid))
        started = time.monotonic()
        server.proc.send_signal(signal.SIGTERM)
        assert server.proc.wait(timeout=20) == 0
        took = time.monotonic() - started
    finally:
        server.stop()
    for pid in readers:
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1][:3]
    print(f"\nSIGTERM mid-import: the server stopped in {took:.1f} s")


@pytest.mark.parametrize("signal_number", [signal.SIGINT])
def test_ctrl_c_stops_the_command_line_import_leaving_whole_batches(
    tmp_path: Path, model_dir: Path, signal_number: int
) -> None:
    data = tmp_path / "data"
    env = {**os.environ, "CHROMADB_PATH": str(data), "SYMBIOTE_MODEL_DIR": str(model_dir)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "symbiote", "import", str(_export(tmp_path))],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 300
    while not (readers := _readers(proc.pid)) or not _stored_in(data):
        assert time.monotonic() < deadline and proc.poll() is None, "no batch was stored"
        time.sleep(0.1)
    proc.send_signal(signal_number)
    _out, err = proc.communicate(timeout=180)  # the batch in hand is finished first: slow on a loaded machine
    assert proc.returncode == 130, err.decode()
    assert b"interrupted" in err and b"Traceback" not in err and b"Exception ignored" not in err, err.decode()
    for pid in readers:
        assert not Path(f"/proc/{pid}").exists()
    made = build_runtime(Settings(chromadb_path=data, model_dir=model_dir, store_process=False))
    try:
        stored = asyncio.run(_count(made.engine.bulk))
    finally:
        made.close()
    assert stored % BATCH == 0 and stored < ENTRIES, stored


async def _count(bulk: object) -> int:
    lines = [chunk async for chunk in export_lines(bulk, None)]  # type: ignore[arg-type]
    return "".join(lines).count("\n") - 1
