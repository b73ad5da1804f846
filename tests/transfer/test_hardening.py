"""Issue 30, items 4, 5, 6 and 11, through the console's import over the real app in this process
(a real server where its stop and start are the point): refused
lines never hold the event loop, an over-long line is refused without being read whole, a bad line
never stops an import, other text under a stored id is a conflict (replaced only when asked), and
uploads stay in the data directory and are gone after a stop and a start.

The probe (import_hostile.py, deleted after 6c59794; docs/security.md has its figures) measured
the probe's sizes (20,000,000 lines, a 1 GiB line).
"""

from __future__ import annotations

import asyncio
import json
import re
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest
from mcp import Client

from tests.conftest import InProcess, ServerProcess, Volume

PART = 2 * 1024 * 1024
HEADER = json.dumps({"format": "symbiote-memories", "version": 1, "model": "all-MiniLM-L6-v2", "dimension": 384})


class Console:
    """The console's import as its page's script drives it: a job, the file in parts, start, poll.
    Its connection is closed after the test (`close_consoles` in tests/transfer/conftest.py)."""

    opened: ClassVar[list[httpx.Client]] = []

    def __init__(self, base: str) -> None:
        self.http = httpx.Client(base_url=f"{base}/console", timeout=60)
        Console.opened.append(self.http)
        page = self.http.get("/transfer").text
        self.csrf = {"X-CSRF-Token": page.split('name="csrf-token" content="')[1].split('"')[0]}

    def upload(self, data: bytes) -> str:
        job = self.http.post("/import", headers=self.csrf).json()["job"]
        for start in range(0, len(data), PART):
            part = self.http.post(f"/import/{job}/part", content=data[start : start + PART], headers=self.csrf)
            assert part.status_code == 200, part.text
        return job

    def run(self, data: bytes, *, replace: bool = False, seconds: float = 120) -> dict[str, Any]:
        job = self.upload(data)
        started = self.http.post(f"/import/{job}/start?dry_run=0&replace={int(replace)}", headers=self.csrf)
        assert started.status_code == 200, started.text
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            page = self.http.get(f"/import/{job}").text
            state = re.search(r'data-state="(\w+)"', page).group(1)  # type: ignore[union-attr]
            if state in ("done", "failed"):
                counts = dict(re.findall(r'<dd id="count-(\w+)">(\d+)</dd>', page))
                return {"state": state, "page": page, **{name: int(value) for name, value in counts.items()}}
            time.sleep(0.2)
        raise AssertionError("the import did not finish")


class InProcessConsole:
    """The same import over the real app in this process (`in_process.http()`): the import runs in
    this event loop, so each poll lets it go on."""

    def __init__(self, http: httpx.AsyncClient, csrf: dict[str, str]) -> None:
        self.http = http
        self.csrf = csrf

    @classmethod
    async def open(cls, http: httpx.AsyncClient) -> InProcessConsole:
        page = (await http.get("/console/transfer")).text
        return cls(http, {"X-CSRF-Token": page.split('name="csrf-token" content="')[1].split('"')[0]})

    async def upload(self, data: bytes) -> str:
        job: str = (await self.http.post("/console/import", headers=self.csrf)).json()["job"]
        for start in range(0, len(data), PART):
            part = await self.http.post(
                f"/console/import/{job}/part", content=data[start : start + PART], headers=self.csrf
            )
            assert part.status_code == 200, part.text
        return job

    async def finished(self, job: str, seconds: float = 120) -> str:
        """The job's page once its import is done or failed."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            page = (await self.http.get(f"/console/import/{job}")).text
            if re.search(r'data-state="(done|failed)"', page):
                return page
            await asyncio.sleep(0.05)
        raise AssertionError("the import did not finish")

    async def run(self, data: bytes, *, replace: bool = False) -> dict[str, Any]:
        job = await self.upload(data)
        started = await self.http.post(
            f"/console/import/{job}/start?dry_run=0&replace={int(replace)}", headers=self.csrf
        )
        assert started.status_code == 200, started.text
        page = await self.finished(job)
        state = re.search(r'data-state="(\w+)"', page).group(1)  # type: ignore[union-attr]
        counts = dict(re.findall(r'<dd id="count-(\w+)">(\d+)</dd>', page))
        return {"state": state, "page": page, **{name: int(value) for name, value in counts.items()}}


def memory_line(i: int, **extra: Any) -> str:
    return json.dumps(
        {"kind": "memory", "content": f"Import hardening note {i}: the shed key is under pot {i}.", **extra}
    )


@pytest.mark.slow
async def test_a_bad_line_never_stops_an_import(in_process: InProcess) -> None:
    """Item 5: 300 good lines around three the probe sent; before, the import stopped after 250."""
    good = [memory_line(i) for i in range(300)]
    lines = [HEADER, *good[:260], "[" * 100_000 + "]" * 100_000, *good[260:270]]
    lines.append('{"kind":"memory","content":"a very long number","metadata":{"confidence":' + "9" * 5000 + "}}")
    lines += good[270:280]
    lines.append(
        json.dumps({"format": "symbiote-memories", "version": 1, "counts": {"memories": {"x": 1}}, "dimension": "x"})
    )
    lines += good[280:]
    async with in_process.http() as http:
        report = await (await InProcessConsole.open(http)).run(("\n".join(lines) + "\n").encode())
    assert report["state"] == "done" and report["added"] == 300, report
    assert report["refused"] == 3
    assert (
        "nested too deeply" in report["page"] and "too many digits" in report["page"] and "first line" in report["page"]
    )


async def test_refused_lines_never_hold_the_event_loop(
    in_process: InProcess, sampled: Callable[[int, int], Volume]
) -> None:
    """Item 4: a million lines of `{}` (150,000 but under `--soak`: seconds of work for the loop to
    keep answering through); before, /health waited for all of them (55 s for 20 million). The
    import runs in this event loop beside the calls to /health: a held loop holds them."""
    lines = sampled(1_000_000, 150_000).count
    async with in_process.http() as http:
        console = await InProcessConsole.open(http)
        job = await console.upload(
            HEADER.encode() + b"\n" + b"{}\n" * lines
        )  # an export's header first, or it is refused whole

        async def health_seconds() -> float:
            started = time.perf_counter()
            assert (await http.get("/health")).status_code == 200
            return time.perf_counter() - started

        # The baseline, in this run: /health's slowest answer before the import, on a machine that may be
        # busy with other work. A held loop adds the import's whole length (seconds) on top of it.
        idle = [await health_seconds() for _ in range(20)]
        latencies: list[float] = []
        done = asyncio.Event()

        async def watch() -> None:
            while not done.is_set():
                latencies.append(await health_seconds())
                await asyncio.sleep(0.05)

        started = time.perf_counter()
        watcher = asyncio.create_task(watch())
        try:
            assert (await http.post(f"/console/import/{job}/start", headers=console.csrf)).status_code == 200
            page = await console.finished(job)
        finally:
            done.set()
            await watcher
        took = time.perf_counter() - started
    assert 'data-state="done"' in page and f'<dd id="count-refused">{lines}</dd>' in page
    assert len(latencies) > 10 and max(latencies) < 1.0 + max(idle), (took, max(latencies), max(idle))
    print(f"\n{lines:,} refused lines in {took:.1f} s; /health at most {max(latencies) * 1000:.0f} ms meanwhile")


async def test_an_over_long_line_is_refused_without_being_read_whole(in_process: InProcess) -> None:
    """Item 4: a 64 MiB line between good ones; before, the server grew by more than three times its
    size. What the import allocates is traced (tracemalloc) in this process, where it runs."""
    data = ("\n".join([HEADER, memory_line(1000)]) + "\n").encode()
    data += b'{"kind":"memory","content":"' + b"x" * (64 * 1024 * 1024) + b'"}\n'
    data += (memory_line(1001) + "\n").encode()
    async with in_process.http() as http:
        console = await InProcessConsole.open(http)
        job = await console.upload(data)
        del data
        tracemalloc.start()
        try:
            baseline = tracemalloc.get_traced_memory()[0]
            assert (await http.post(f"/console/import/{job}/start", headers=console.csrf)).status_code == 200
            page = await console.finished(job)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert '<dd id="count-added">2</dd>' in page and "line 3: longer than 8,388,608 bytes" in page, page
    grew = (peak - baseline) / 2**20
    assert grew < 40, (baseline, peak)
    print(f"\na 64 MiB line refused; the import allocated at most {grew:.1f} MiB meanwhile")


async def test_other_text_under_a_stored_id_is_a_conflict_replaced_only_when_asked(in_process: InProcess) -> None:
    """Item 6: an import never replaces a memory's text silently, however new the file says it is."""
    async with Client(in_process.server) as mcp:
        stored = await mcp.call_tool("store_memory", {"content": "The boat is moored at pier 7.", "tags": ["boat"]})
    memory_id = stored.structured_content["memory_id"]
    changed = json.dumps(
        {
            "kind": "memory",
            "id": memory_id,
            "content": "The boat was sold in May.",
            "tags": ["boat"],
            "updated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600)),
        }
    )
    async with in_process.http() as http:
        console = await InProcessConsole.open(http)
        report = await console.run(f"{changed}\n".encode())
        assert report["conflicts"] == 1 and report["updated"] == 0, report
        assert f"/memories/{memory_id}" in report["page"]
        assert (await http.get(f"/console/memories/{memory_id}")).text.count("The boat is moored at pier 7.") >= 1
        far = json.loads(changed) | {"updated": "3000-01-01T00:00:00Z"}
        assert (await console.run(f"{json.dumps(far)}\n".encode()))["refused"] == 1  # a time far ahead sticks nowhere
        replaced = await console.run(f"{changed}\n".encode(), replace=True)
    assert replaced["replaced"] == 1, replaced
    async with Client(in_process.server) as mcp:
        now = await mcp.call_tool("get_memory", {"memory_id": memory_id})
    assert now.structured_content["content"] == "The boat was sold in May."


@pytest.mark.server("the process is the point: what a stop and a start of the server do to its uploads")
def test_uploads_stay_in_the_data_directory_and_go_at_stop_and_start(tmp_path: Path, model_dir: Path) -> None:
    """Item 11: an upload never started is in the data directory, not /tmp, and a stop removes it;
    what a killed server left is removed at the next start."""
    server = ServerProcess(tmp_path / "data").start()
    uploads = server.data_dir / "import-uploads"
    before = set(Path(tempfile.gettempdir()).glob("symbiote-import-*"))
    try:
        Console(server.base_url).upload(b"x" * 1000)
        kept = list(uploads.iterdir())
        assert len(kept) == 1 and kept[0].stat().st_size == 1000 and kept[0].stat().st_mode & 0o077 == 0
        assert set(Path(tempfile.gettempdir()).glob("symbiote-import-*")) == before
        server.stop()
        assert not uploads.exists() or not list(uploads.iterdir())
        uploads.mkdir(exist_ok=True)
        (uploads / "left-by-a-killed-server.jsonl").write_text("{}\n")
        server.start()
        assert not uploads.exists() or not list(uploads.iterdir())
    finally:
        server.stop()
