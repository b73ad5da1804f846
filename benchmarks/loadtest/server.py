"""The server under load: `symbiote serve` restarted on the same store (one log for every boot), its memory
and CPU counted with its store process's, the package it serves, and the event-loop lag probe."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
from server_process import MODEL_DIR, ROOT, ServerProcess


class LoadServer(ServerProcess):
    """`symbiote serve` on a free loopback port; `boot_log` is what the latest start wrote."""

    def __init__(self, data: Path, log: Path, source: Path | None = None) -> None:
        env = {"HF_HUB_OFFLINE": "1", "SYMBIOTE_MODEL_DIR": os.environ.get("SYMBIOTE_MODEL_DIR", str(MODEL_DIR))}
        if source is not None:  # serve this copy of the package instead of the working tree
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(source), os.environ.get("PYTHONPATH")]))
        super().__init__(data, env=env, log=log, cwd=source)
        self.log = log
        self._mark = 0
        self.window, self.peaks = "start", dict[str, int]()  # named parts of the run; their peak RSS

    def start(self, timeout: float = 180.0, store: bool = True) -> float:
        self._mark = self.log.stat().st_size if self.log.exists() else 0
        return super().start(timeout, store)

    def boot_log(self) -> str:
        with self.log.open("rb") as log:
            log.seek(self._mark)
            return log.read().decode(errors="replace")

    def _tree(self) -> list[psutil.Process]:
        """The server and its descendants: the embedded store runs in a child process."""
        if self.proc is None or self.proc.poll() is not None:
            return []
        with contextlib.suppress(psutil.Error):
            root = psutil.Process(self.proc.pid)
            return [root, *root.children(recursive=True)]
        return []

    def _sum(self, read: Callable[[psutil.Process], float]) -> float:
        total = 0.0
        for process in self._tree():
            with contextlib.suppress(psutil.Error):  # a child that just exited
                total += read(process)
        return total

    def rss(self) -> int | None:
        """RSS of the server and its store process together."""
        return int(self._sum(lambda p: p.memory_info().rss)) or None

    def cpu_seconds(self) -> float:
        return self._sum(lambda p: sum(p.cpu_times()[:2]))

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(timeout=30)

    async def sample_rss(self) -> None:
        """Until cancelled: RSS once a second, the peak kept per `window` (across restarts)."""
        while True:
            self.peaks[self.window] = max(self.peaks.get(self.window, 0), self.rss() or 0)
            await asyncio.sleep(1.0)


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=False).stdout.strip()


def checkout(rev: str | None, workdir: Path) -> tuple[Path | None, str]:
    """The package to serve: `rev`'s symbiote/ and personalities/ unpacked in workdir, or the working tree."""
    if not rev:
        dirty = " (with uncommitted changes)" if _git("status", "--porcelain", "symbiote") else ""
        return None, f"working tree at {_git('rev-parse', '--short', 'HEAD')}{dirty}"
    source = workdir / "source"
    source.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, "symbiote", "personalities"], check=True, capture_output=True
    )
    subprocess.run(["tar", "-x", "-C", str(source)], input=archive.stdout, check=True)
    return source, f"git {rev} ({_git('rev-parse', '--short', rev)})"


class LagProbe:
    """probe.py in its own process, so the load generator's busy event loop does not skew it."""

    def __init__(self, url: str) -> None:
        probe = Path(__file__).with_name("probe.py")
        self.proc = subprocess.Popen([sys.executable, str(probe), url], stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def finish(self) -> dict[str, Any]:
        """Its latencies in seconds: {"lag_probe": [...], "health": [...], "errors": n}."""
        out, _ = self.proc.communicate(b"", timeout=60)
        return json.loads(out)
