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
from tests.conftest import InProcess, ServerProcess
from tests.transfer.test_hardening import Console, InProcessConsole

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


async def _stored_now(http: httpx.AsyncClient) -> int:
    return len((await http.get("/console/export")).text.splitlines()) - 1


@pytest.mark.slow
async def test_cancel_in_the_console_stops_the_import_between_batches(in_process: InProcess, tmp_path: Path) -> None:
    """Over the real app in this process: the import runs in this event loop and its reader is a
    child of this process."""
    async with in_process.http() as http:
        console = await InProcessConsole.open(http)
        job = await console.upload(_export(tmp_path).read_bytes())
        started = await http.post(f"/console/import/{job}/start?dry_run=0", headers=console.csrf)
        assert started.status_code == 200
        deadline = time.monotonic() + 300
        while await _stored_now(http) < BATCH:
            assert time.monotonic() < deadline, "no batch was stored"
            await asyncio.sleep(0.1)
        assert _readers(os.getpid())  # the cancel has a reader to stop
        page = (await http.get(f"/console/import/{job}")).text
        assert 'id="cancel-import"' in page
        form = {"csrf": console.csrf["X-CSRF-Token"]}
        cancelled = await http.post(f"/console/import/{job}/cancel", data=form, follow_redirects=True)
        assert 'data-state="failed"' in cancelled.text or 'id="import-stopping"' in cancelled.text, cancelled.text[
            -800:
        ]
        ended = await console.finished(job, seconds=180)  # a loaded machine finishes the batch in hand slowly
        assert 'data-state="failed"' in ended and "Cancelled" in ended, ended[-800:]
        assert not _readers(os.getpid())
        stored = await _stored_now(http)
        await asyncio.sleep(2)  # the loop runs on: a batch still under way would be stored meanwhile
        assert await _stored_now(http) == stored and stored % BATCH == 0 and stored < ENTRIES, stored


@pytest.mark.server("the process is the point: SIGTERM to `symbiote serve` while an import runs in it")
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


@pytest.mark.server("the process is the point: Ctrl-C at `symbiote import`, a process of its own")
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
