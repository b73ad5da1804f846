"""Symbiote, and mcp-memory-service beside it, on the seed's container: 0.5 CPU and 1 GB (issue 61).

The seed sizes production at 0.5 vCPU and 1 GB (Azure Container Apps, scaled to zero) and asks a
request to wake it within two seconds; every other figure in benchmarks/ is on two free cores.
This script sets that container's limits itself with a cgroup and measures a start in it:
process start to listening (TCP accept), to `tools/list`, to the first search and the first
store answered (medians of `--starts`, and the range), then `--calls` searches and stores in
turn (p50 / p95, the official MCP SDK client over HTTP; back to back, or `--pause` apart as an
assistant's calls come), the peak memory of the cgroup, the CPU
seconds used before `tools/list`, and the periods the quota throttled. Each start runs in new
groups, removed after it (on Ctrl-C and failures too): cgroup v1 (`cpu.cfs_quota_us` of
`cpu.cfs_period_us`, `memory.limit_in_bytes`) or v2 (`cpu.max`, `memory.max`), as root. Where no
quota can be set (not root, nothing writable) it says so and runs unconfined, labelled so.

The server joins its groups before it runs a line of Python: this process moves itself into
them, starts the server (fork and exec: the child is born inside) and moves back, so imports
count; the two launchers (`server_process.ServerProcess`, `vs_peer.peer`) stay the only rules
for starting each server. What the fork costs this process (a few ms) is counted with the child.

Every start is a wake: it runs on a copy of a data directory that a start before it (unconfined)
left behind, with its handshake recording and its store; `--first-start` measures the very first
start on an empty directory instead (no recording, and no store to open). `--memories N` fills the directory beforehand, outside the quota
(Symbiote by its own `symbiote import --text`, the peer by `memory_store` calls), kept in
/tmp/symbiote-bench-data-N for the next run. Configurations take turns start by start. The
peer runs with its semantic dedup off (see PEER_ENV): on, it refuses most of bench_core's
look-alike memories, and a refusal is not a store.

As root (no sudo needed), the peer installed as benchmarks/vs_peer.py describes:

    .venv/bin/python benchmarks/container.py --starts 5 --peer-venv /tmp/peer-venv
    .venv/bin/python benchmarks/container.py --memories 10000 --calls 1000 --json out.json

The cgroup counts page cache the server reads for the first time; files already cached for
another group (the model, a store this process just copied) are not charged to it again.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import psutil

# this directory is on sys.path when run as a script
from bench_core import synthetic_memory, synthetic_query
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_client import timed_calls
from percentiles import percentile
from ports import free_port, wait_listening
from server_process import ServerProcess, stop, symbiote_command
from vs_peer import Contender, PeakRss, peer, symbiote

GROUP = f"symbiote-bench-{os.getpid()}"
PERIOD_US = 100_000
V2_ROOT = Path("/sys/fs/cgroup")
DATA_CACHE = Path(tempfile.gettempdir())  # symbiote-bench-data-<n>/<server>
START_TIMEOUT = 300.0
LIMIT = 5  # results per search, as bench_core asks
OURS = "Symbiote"  # vs_peer's name for this project's server
# bench_core's memories are much alike: with its semantic dedup on (its default), the peer refuses
# most as near-duplicates of one stored in the last 24 h, and a refusal is not a store. Off, its
# store skips that search, which can only flatter it.
PEER_ENV = {"MCP_SEMANTIC_DEDUP_ENABLED": "false"}
made: list[Path] = []  # every group directory made and not yet removed: removed at the end whatever happens


# --- the cgroup ---------------------------------------------------------------------------------


def _controllers_v1() -> dict[str, Path]:
    """Where each cgroup v1 controller we use is mounted (cpu and cpuacct are often one mount)."""
    mounts: dict[str, Path] = {}
    with open("/proc/self/mounts") as table:
        for line in table:
            _device, where, fstype, options, *_ = line.split()
            for option in options.split(",") if fstype == "cgroup" else ():
                if option in ("cpu", "cpuacct", "memory"):
                    mounts.setdefault(option, Path(where))
    return mounts


def _own_groups() -> dict[str, str]:
    """This process's group per v1 controller, and under "" its v2 group (from /proc/self/cgroup)."""
    groups: dict[str, str] = {}
    with open("/proc/self/cgroup") as table:
        for line in table:
            _id, controllers, path = line.rstrip("\n").split(":", 2)
            for name in controllers.split(",") if controllers else [""]:
                groups[name] = path
    return groups


@dataclass
class Box:
    """The groups one start runs in (role -> directory: cpu, cpuacct, memory), or none: unconfined."""

    kind: str  # "cgroup v1", "cgroup v2" or "unconfined"
    why: str = ""  # when unconfined: why no quota could be set
    dirs: dict[str, Path] = field(default_factory=dict)
    home: dict[str, Path] = field(default_factory=dict)  # where this process goes back to, per role
    written: list[str] = field(default_factory=list)  # "file = value", for the report

    def _set(self, role: str, name: str, value: str) -> None:
        (self.dirs[role] / name).write_text(value)
        self.written.append(f"{self.dirs[role] / name} = {value}")

    def _read(self, role: str, name: str) -> str | None:
        path = self.dirs[role] / name if role in self.dirs else None
        return path.read_text() if path is not None and path.exists() else None

    def _stat(self, role: str, name: str) -> dict[str, int]:
        text = self._read(role, name) or ""
        return {key: int(value) for key, value in (line.split() for line in text.splitlines() if line.strip())}

    def admit(self, launch: Callable[[], subprocess.Popen[bytes]]) -> subprocess.Popen[bytes]:
        """Run `launch` with this process in the groups, so the child it forks is born in them."""
        if not self.dirs:
            return launch()
        pid = str(os.getpid())
        try:
            for folder in dict.fromkeys(self.dirs.values()):
                (folder / "cgroup.procs").write_text(pid)
            return launch()
        finally:
            for folder in dict.fromkeys(self.home.values()):
                (folder / "cgroup.procs").write_text(pid)

    def cpu_seconds(self, proc: subprocess.Popen[bytes]) -> float:
        """CPU time the group (or, unconfined, the process tree) has used so far."""
        if self.kind == "cgroup v1" and "cpuacct" in self.dirs:
            return int(self._read("cpuacct", "cpuacct.usage") or 0) / 1e9
        if self.kind == "cgroup v2":
            return self._stat("cpu", "cpu.stat").get("usage_usec", 0) / 1e6
        return tree_cpu_seconds(proc.pid)

    def throttled(self) -> tuple[int, int] | None:
        """(periods, of which throttled) so far; None unconfined."""
        if "cpu" not in self.dirs:
            return None
        stat = self._stat("cpu", "cpu.stat")
        return stat.get("nr_periods", 0), stat.get("nr_throttled", 0)

    def peak_memory(self) -> int | None:
        """The group's peak memory use, page cache included; None where the kernel keeps none."""
        name = "memory.max_usage_in_bytes" if self.kind == "cgroup v1" else "memory.peak"
        text = self._read("memory", name)
        return int(text) if text else None

    def oom_kills(self) -> int:
        name = "memory.oom_control" if self.kind == "cgroup v1" else "memory.events"
        return self._stat("memory", name).get("oom_kill", 0) if "memory" in self.dirs else 0

    def remove(self) -> None:
        """Remove the groups (what is left running in them was started by us: killed by pid first)."""
        for folder in reversed(list(dict.fromkeys(self.dirs.values()))):
            remove_group(folder)
        self.dirs.clear()


def remove_group(folder: Path, patience: float = 10.0) -> None:
    """rmdir a group of ours once its processes are gone; kills the ones still there by pid."""
    deadline = time.monotonic() + patience
    while folder.exists():
        pids = [int(p) for p in (folder / "cgroup.procs").read_text().split()]
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        try:
            folder.rmdir()
        except OSError:  # EBUSY while the last of them exits
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    if folder in made:
        made.remove(folder)


def _mkdir(folder: Path) -> Path:
    folder.mkdir()
    made.append(folder)
    return folder


def make_box(cpus: float, memory_bytes: int) -> Box:
    """New groups with `cpus` of CPU and `memory_bytes`, or an unconfined Box saying why not."""
    if os.geteuid() != 0:
        return Box("unconfined", why="not root: a cgroup's quota and limit can only be set as root")
    quota = str(round(cpus * PERIOD_US))
    try:
        if (V2_ROOT / "cgroup.controllers").exists():
            box = Box("cgroup v2")
            missing = {"cpu", "memory"} - set((V2_ROOT / "cgroup.subtree_control").read_text().split())
            if missing:  # the root group may hold processes and still hand controllers down
                value = " ".join(f"+{name}" for name in sorted(missing))
                (V2_ROOT / "cgroup.subtree_control").write_text(value)
                box.written.append(f"{V2_ROOT / 'cgroup.subtree_control'} = {value}")
            folder = _mkdir(V2_ROOT / GROUP)
            box.dirs = {"cpu": folder, "memory": folder}
            box.home = {"": V2_ROOT / _own_groups()[""].lstrip("/")}
            box._set("cpu", "cpu.max", f"{quota} {PERIOD_US}")
            box._set("memory", "memory.max", str(memory_bytes))
            return box
        mounts = _controllers_v1()
        if not {"cpu", "memory"} <= set(mounts):
            return Box("unconfined", why=f"no cgroup v2, and cgroup v1 mounts only {sorted(mounts) or 'nothing'}")
        box = Box("cgroup v1")
        own = _own_groups()
        for role, mount in mounts.items():
            box.dirs[role] = next((d for d in box.dirs.values() if d.parent == mount), None) or _mkdir(mount / GROUP)
            box.home[role] = mount / own.get(role, "/").lstrip("/")
        box._set("cpu", "cpu.cfs_period_us", str(PERIOD_US))
        box._set("cpu", "cpu.cfs_quota_us", quota)
        box._set("memory", "memory.limit_in_bytes", str(memory_bytes))
        return box
    except OSError as exc:  # read-only cgroupfs, a controller taken, a kernel without the file
        for folder in reversed(list(made)):
            with contextlib.suppress(OSError):
                remove_group(folder, patience=1)
        return Box("unconfined", why=f"could not set the quota: {exc}")


def tree_cpu_seconds(pid: int) -> float:
    """User and system CPU of a process, its live descendants, and the children it has reaped."""
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0.0
    total = 0.0
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            t = proc.cpu_times()
            total += t.user + t.system + (t.children_user + t.children_system if proc is root else 0.0)
    return total


# --- the servers and their data --------------------------------------------------------------------


@contextlib.contextmanager
def environment(**values: str) -> Iterator[None]:
    """`values` in os.environ for a while (vs_peer's launcher passes on ours)."""
    before = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def contender(name: str, peer_venv: Path | None) -> Contender:
    """vs_peer's contender; Symbiote's with its user cache directory inside the start's directory, so
    the only handshake recording it finds is its data directory's (the container's home is new)."""
    if name == "peer":
        assert peer_venv is not None
        theirs = peer(peer_venv)

        def launch_peer(work: Path, port: int) -> subprocess.Popen[bytes]:
            with environment(**PEER_ENV):
                return theirs.launch(work, port)

        return dataclasses.replace(theirs, launch=launch_peer)

    def launch(work: Path, port: int) -> subprocess.Popen[bytes]:
        env = {"HF_HUB_OFFLINE": "1", "XDG_CACHE_HOME": str(work / "user-cache")}
        return ServerProcess(work / "chroma", port=port, log=work / "server.log", env=env).launch()

    return dataclasses.replace(symbiote(), launch=launch)


def memories(n: int) -> list[str]:
    """The same n memories every time, as bench_core writes them."""
    rng = random.Random(7)
    return [synthetic_memory(i, rng) for i in range(n)]


async def _started(server: Contender, work: Path) -> tuple[subprocess.Popen[bytes], str]:
    """Launch unconfined and wait until it listens; the process and its MCP URL."""
    port = free_port()
    proc = server.launch(work, port)
    await listening(port, proc)
    return proc, f"http://127.0.0.1:{port}/mcp"


async def filled(server: Contender, n: int) -> Path | None:
    """The kept directory holding `n` memories for `server`, made the first time (outside any quota)."""
    if n == 0:
        return None
    kept = DATA_CACHE / f"symbiote-bench-data-{n}" / ("symbiote" if server.name == OURS else "peer")
    if kept.exists():
        return kept
    kept.parent.mkdir(exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{kept.name}-", dir=kept.parent))
    began = time.monotonic()
    print(f"filling {kept} with {n:,} memories (once; later runs reuse it)", flush=True)
    try:
        if server.name == OURS:
            listing = work / "memories.txt"
            listing.write_text("".join(m + "\n" for m in memories(n)))
            env = {**os.environ, "CHROMADB_PATH": str(work / "chroma"), "HF_HUB_OFFLINE": "1"}
            command = [*symbiote_command(), "import", "--text", str(listing), "--tag", "bench-fill"]
            subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
            listing.unlink()
        else:
            refused = await _fill_by_calls(server, work, memories(n))
            print(f"  the peer refused {refused} of them", flush=True)
        (work / "server.log").unlink(missing_ok=True)
        work.rename(kept)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    print(f"  filled in {time.monotonic() - began:.0f} s", flush=True)
    return kept


async def _fill_by_calls(server: Contender, work: Path, texts: list[str], workers: int = 8) -> int:
    """Store `texts` one call each from `workers` clients; how many the server refused."""
    proc, url = await _started(server, work)
    queue = list(reversed(texts))
    refused = 0

    async def worker() -> None:
        nonlocal refused
        async with Client(url, read_timeout_seconds=300) as client:
            while queue:
                result = await client.call_tool(server.store_tool, {"content": queue.pop()})
                refused += bool(result.is_error)

    try:
        await asyncio.gather(*(worker() for _ in range(workers)))
    finally:
        stop(proc, timeout=60)
    return refused


async def template(server: Contender, kept: Path | None, folder: Path, first_start: bool) -> Path:
    """What each start copies: the kept data after one unconfined start on it (so its handshake
    recording matches the code as it is now), or with `first_start` an empty directory."""
    folder.mkdir(parents=True)
    if kept is not None:
        shutil.copytree(kept, folder, dirs_exist_ok=True)
    if first_start:
        return folder
    proc, url = await _started(server, folder)
    try:
        async with Client(url, read_timeout_seconds=120) as client:
            await client.list_tools()
            result = await client.call_tool(server.search_tool, {"query": "what am I working on?", "limit": LIMIT})
            if result.is_error:
                raise RuntimeError(f"{server.name}: search failed while preparing: {result.content}")
            if server.settle is not None:
                await server.settle(client)
        recording = folder / "chroma" / "handshake-cache.json"
        deadline = time.monotonic() + 30
        while server.name == OURS and not recording.exists() and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
    finally:
        stop(proc, timeout=60)
    (folder / "server.log").unlink(missing_ok=True)
    shutil.rmtree(folder / "user-cache", ignore_errors=True)
    return folder


# --- one start ---------------------------------------------------------------------------------------


@dataclass
class Start:
    """One start's figures: seconds from process start, CPU seconds, cgroup counters, call latencies."""

    listening_s: float = 0.0
    tools_s: float = 0.0
    search_s: float = 0.0
    store_s: float = 0.0
    cpu_before_tools_s: float = 0.0
    periods_before_tools: int | None = None
    throttled_before_tools: int | None = None
    periods: int | None = None
    throttled: int | None = None
    peak_cgroup_bytes: int | None = None
    peak_rss_bytes: int = 0
    oom_kills: int = 0
    search_ms: list[float] = field(default_factory=list)
    store_ms: list[float] = field(default_factory=list)


async def listening(port: int, proc: subprocess.Popen[bytes], timeout: float = START_TIMEOUT) -> None:
    """Return once the server accepts a TCP connection; raise if it exits or `timeout` passes first."""
    waiting = asyncio.ensure_future(wait_listening(port))
    deadline = time.monotonic() + timeout
    try:
        while not waiting.done():
            if proc.poll() is not None:
                raise RuntimeError(f"the server exited with {proc.returncode} before it listened")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the server did not listen within {timeout:.0f} s")
            await asyncio.wait({waiting}, timeout=0.05)
    finally:
        waiting.cancel()


def _answered(result: Any, what: str) -> None:
    if result.is_error:
        raise RuntimeError(f"{what} answered with an error: {result.content}")


async def _timed(client: Client, tool: str, arguments: dict[str, Any]) -> float:
    """One call's milliseconds (timed and checked by mcp_client.timed_calls)."""
    (seconds,) = await timed_calls(client, tool, lambda _: arguments, 1)
    return seconds * 1000


async def one_start(
    server: Contender,
    base: Path,
    cpus: float,
    memory_bytes: int,
    calls: int,
    logs: Path | None = None,
    pause_s: float = 0.0,
) -> Start:
    """A start in new groups on a copy of `base`: the wake figures, then `calls` searches and stores,
    `pause_s` apart.

    With `logs`, the server's log is kept there."""
    figures = Start()
    rng = random.Random(61)  # every start asks the same
    work = Path(tempfile.mkdtemp(prefix="symbiote-bench-start-"))
    shutil.copytree(base, work, dirs_exist_ok=True)
    port = free_port()
    box = make_box(cpus, memory_bytes)
    try:
        # the client's HTTP stack is built before the server starts, as a real client's is (cold_start.py)
        async with httpx2.AsyncClient(timeout=120) as http:
            await _measure(server, work, port, http, box, calls, rng, figures, pause_s)
        if logs is not None:
            shutil.copy(work / "server.log", logs / f"{server.name}-{cpus:g}cpu-{time.strftime('%H%M%S')}.log")
    finally:
        box.remove()
        shutil.rmtree(work, ignore_errors=True)
    return figures


async def _measure(
    server: Contender,
    work: Path,
    port: int,
    http: httpx2.AsyncClient,
    box: Box,
    calls: int,
    rng: random.Random,
    figures: Start,
    pause_s: float = 0.0,
) -> None:
    """Start the server in `box` and fill in `figures`; the server is stopped on the way out."""
    started = time.perf_counter()
    proc = box.admit(lambda: server.launch(work, port))
    rss = PeakRss(proc.pid)
    try:
        await listening(port, proc)
        figures.listening_s = time.perf_counter() - started
        async with Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http)) as client:
            await client.list_tools()
            figures.tools_s = time.perf_counter() - started
            figures.cpu_before_tools_s = box.cpu_seconds(proc)
            figures.periods_before_tools, figures.throttled_before_tools = box.throttled() or (None, None)
            query = {"query": "what am I working on?", "limit": LIMIT}
            _answered(await client.call_tool(server.search_tool, query), "the first search")
            figures.search_s = time.perf_counter() - started
            first = {"content": "Note: the user starts the day by reading the overnight alerts."}
            _answered(await client.call_tool(server.store_tool, first), "the first store")
            figures.store_s = time.perf_counter() - started
            for i in range(calls):  # in turn, as an assistant asks: a search may wait behind a store's work
                ask = {"query": synthetic_query(i, rng), "limit": LIMIT}
                figures.search_ms.append(await _timed(client, server.search_tool, ask))
                await asyncio.sleep(pause_s)
                note = {"content": synthetic_memory(1_000_000 + i, rng)}
                figures.store_ms.append(await _timed(client, server.store_tool, note))
                await asyncio.sleep(pause_s)
        figures.periods, figures.throttled = box.throttled() or (None, None)
    finally:
        figures.peak_rss_bytes = rss.stop()
        stop(proc, timeout=30)
        figures.peak_cgroup_bytes = box.peak_memory()
        figures.oom_kills = box.oom_kills()


# --- the table ---------------------------------------------------------------------------------------


def _spread(values: list[float], unit: str = "s", digits: int = 2) -> str:
    """The median, and the range when there is more than one value."""
    med = f"{statistics.median(values):.{digits}f} {unit}"
    return med if len(values) < 2 else f"{med} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def _pair(values: list[float]) -> str:
    return f"{percentile(values, 50):.1f} / {percentile(values, 95):.1f}" if values else "-"


def _mb(values: list[int | None]) -> str:
    known = [v / 2**20 for v in values if v is not None]
    return f"{statistics.median(known):.0f} (max {max(known):.0f})" if known else "-"


def _throttled(runs: list[Start], before: bool) -> str:
    pairs = [(s.periods_before_tools, s.throttled_before_tools) if before else (s.periods, s.throttled) for s in runs]
    known = [(p, t) for p, t in pairs if p is not None and t is not None]
    if not known:
        return "-"
    return f"{statistics.median(t for _, t in known):.0f} of {statistics.median(p for p, _ in known):.0f}"


def rows(runs: list[Start], calls: int) -> dict[str, str]:
    n = len(runs) * calls
    return {
        "listening (TCP accept)": _spread([s.listening_s for s in runs]),
        "`tools/list` answered": _spread([s.tools_s for s in runs]),
        "first search answered": _spread([s.search_s for s in runs]),
        "first store answered": _spread([s.store_s for s in runs]),
        "CPU used before `tools/list`": _spread([s.cpu_before_tools_s for s in runs], "s CPU"),
        "periods throttled, before `tools/list`": _throttled(runs, before=True),
        "periods throttled, whole start": _throttled(runs, before=False),
        f"search p50 / p95 ms ({n:,} calls)": _pair([v for s in runs for v in s.search_ms]),
        f"store p50 / p95 ms ({n:,} calls)": _pair([v for s in runs for v in s.store_ms]),
        "peak memory of the cgroup, MB": _mb([s.peak_cgroup_bytes for s in runs]),
        "peak RSS of the process tree, MB": _mb([s.peak_rss_bytes for s in runs]),
        "OOM kills": str(sum(s.oom_kills for s in runs)),
    }


def table(results: dict[str, list[Start]], calls: int) -> None:
    columns = {name: rows(runs, calls) for name, runs in results.items() if runs}
    if not columns:
        return
    names = list(columns)
    print("| from process start | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for key in columns[names[0]]:
        print(f"| {key} | " + " | ".join(columns[n][key] for n in names) + " |")


# --- main ------------------------------------------------------------------------------------------


@contextlib.contextmanager
def groups_removed() -> Iterator[None]:
    """Whatever ends the run (Ctrl-C, SIGTERM, a failure), remove every group still there."""
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)  # SIGTERM as Ctrl-C
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        for folder in reversed(list(made)):
            try:
                remove_group(folder)
            except OSError as exc:
                print(f"could not remove {folder}: {exc}", file=sys.stderr)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    probe = make_box(args.cpus, args.memory_mb * 2**20)
    probe.remove()
    cpus = list(dict.fromkeys([args.cpus, *args.also_cpus]))
    if probe.kind == "unconfined":
        print(f"NO QUOTA: {probe.why}. Every figure below is unconfined (the whole machine).", flush=True)
        cpus = cpus[:1]
    else:
        print(f"{probe.kind}: each start in new groups named {GROUP}, writing:")
        for line in probe.written:
            print(f"  {line}")
    servers = [contender("symbiote", None)] + ([contender("peer", args.peer_venv)] if args.peer_venv else [])
    if args.first_start and args.memories:
        raise SystemExit("--first-start measures an empty data directory: leave --memories at 0")
    scratch = Path(tempfile.mkdtemp(prefix=f"{GROUP}-"))
    try:
        bases = {}
        for server in servers:
            bases[server.name] = await template(
                server, await filled(server, args.memories), scratch / server.name, args.first_start
            )
        label = "unconfined" if probe.kind == "unconfined" else "{:g} CPU"
        configs = [(c, s) for c in cpus for s in servers]
        results: dict[str, list[Start]] = {f"{s.name}, {label.format(c)}": [] for c, s in configs}
        began = time.strftime("%H:%M")
        for start in range(args.starts):
            for (c, server), runs in zip(configs, results.values()):
                print(f"start {start + 1}/{args.starts}: {server.name} at {label.format(c)}", flush=True)
                runs.append(
                    await one_start(
                        server, bases[server.name], c, args.memory_mb * 2**20, args.calls, args.logs, args.pause / 1000
                    )
                )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    limit = "" if probe.kind == "unconfined" else f", memory limit {args.memory_mb} MB"
    state = "an empty data directory, first start" if args.first_start else f"{args.memories:,} memories, a wake"
    state += f", calls {args.pause:g} ms apart" if args.pause else ", calls back to back"
    print(
        f"\n{state}; {probe.kind}{limit}; medians of {args.starts} starts (range); "
        f"{began}-{time.strftime('%H:%M %Z')}, load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}"
    )
    table(results, args.calls)
    return {
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "began": began,
        "confinement": {"kind": probe.kind, "why": probe.why, "written": probe.written},
        "memory_mb": args.memory_mb,
        "memories": args.memories,
        "first_start": args.first_start,
        "starts": args.starts,
        "calls": args.calls,
        "load_average": os.getloadavg(),
        "configurations": {
            name: {"table": rows(runs, args.calls), "starts": [dataclasses.asdict(s) for s in runs]}
            for name, runs in results.items()
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--cpus", type=float, default=0.5, help="the CPU quota, in cores (default 0.5)")
    parser.add_argument(
        "--also-cpus", type=float, nargs="*", default=[2.0], help="quotas measured too (default 2; none: --also-cpus)"
    )
    parser.add_argument("--memory-mb", type=int, default=1024, help="the memory limit (default 1024)")
    parser.add_argument("--starts", type=int, default=5, help="starts per configuration (default 5)")
    parser.add_argument("--calls", type=int, default=100, help="searches and stores per start (default 100 each)")
    parser.add_argument(
        "--pause",
        type=float,
        default=0.0,
        help="milliseconds between calls (default 0: back to back, which spends the whole quota on the calls)",
    )
    parser.add_argument("--memories", type=int, default=0, help="memories stored beforehand (default 0)")
    parser.add_argument("--first-start", action="store_true", help="an empty data directory, no recording")
    parser.add_argument("--peer-venv", type=Path, help="mcp-memory-service's virtualenv: measure it too")
    parser.add_argument("--logs", type=Path, help="keep each start's server log in this directory")
    parser.add_argument("--json", type=Path, help="write the figures to this file")
    args = parser.parse_args()
    if args.logs is not None:
        args.logs.mkdir(parents=True, exist_ok=True)
    with groups_removed():
        figures = asyncio.run(run(args))
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
