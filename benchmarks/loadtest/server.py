"""The server under load: `symbiote serve` restarted on the same store, its memory and CPU read from /proc.

Also which package it serves (the working tree, or a git revision unpacked beside the data).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Self

from server_process import MODEL_DIR, ROOT, ServerProcess

TICKS = os.sysconf("SC_CLK_TCK")


class LoadServer(ServerProcess):
    """`symbiote serve` as a child process on a free loopback port; every start appends to one log."""

    def __init__(self, data: Path, log_path: Path, log_level: str, source: Path | None = None) -> None:
        env = {
            "HF_HUB_OFFLINE": "1",
            "LOG_LEVEL": log_level,
            "SYMBIOTE_MODEL_DIR": os.environ.get("SYMBIOTE_MODEL_DIR", str(MODEL_DIR)),
        }
        if source is not None:  # serve this copy of the package instead of the working tree
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(source), os.environ.get("PYTHONPATH")]))
        super().__init__(data, env=env, log=log_path, cwd=source)
        self.log_path: Path = log_path
        self.source = source
        self.boots = 0
        self._log_mark = 0

    def start(self, timeout: float = 180.0, store: bool = True) -> float:
        """Start and wait for health store == 'ready'; returns seconds to ready. Raises if it never is."""
        self._log_mark = self.log_path.stat().st_size if self.log_path.exists() else 0
        with self.log_path.open("ab") as log:
            log.write(f"\n===== load.py: boot {self.boots + 1} =====\n".encode())
        started = time.monotonic()
        self.launch()
        self.boots += 1
        return self.wait_ready(started, timeout, store)

    def _tree(self) -> list[int]:
        """The server and its descendants (the embedded store runs in a child process)."""
        if self.proc is None or self.proc.poll() is not None:
            return []
        parents: dict[int, int] = {}
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                except (OSError, IndexError, ValueError):
                    pass
        tree = [self.proc.pid]
        for pid in tree:
            tree.extend(child for child, parent in parents.items() if parent == pid)
        return tree

    def rss(self) -> int | None:
        """RSS of the server and its store process together."""
        total = 0
        for pid in self._tree():
            try:
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
            except OSError:
                pass
        return total or None

    def cpu_seconds(self) -> float | None:
        """CPU time of the server and its store process together."""
        total, seen = 0.0, False
        for pid in self._tree():
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                total += (int(fields[11]) + int(fields[12])) / TICKS
                seen = True
            except (OSError, IndexError, ValueError):
                pass
        return total if seen else None

    def boot_log(self) -> str:
        """The log written since the last start."""
        with self.log_path.open("rb") as log:
            log.seek(self._log_mark)
            return log.read().decode(errors="replace")

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)


class RssSampler:
    """Samples the server's RSS once a second; keeps the peak per named window."""

    def __init__(self, server: LoadServer) -> None:
        self.server = server
        self.peaks: dict[str, int] = {}
        self.window = "start"
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            value = self.server.rss()
            if value is not None:
                self.peaks[self.window] = max(self.peaks.get(self.window, 0), value)
            await asyncio.sleep(1.0)

    def __enter__(self) -> Self:
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    def __exit__(self, *_exc: object) -> None:
        if self._task is not None:
            self._task.cancel()


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
