"""Many clients at once against a real `symbiote serve`: load, heavy batch, churn, kill -9.

Usage:
    .venv/bin/python benchmarks/load.py                       # the full run (10-minute mixed load)
    .venv/bin/python benchmarks/load.py --duration 60 --cycles 2000 --kill-rounds 5   # a quick run
    .venv/bin/python benchmarks/load.py --phases kill --kill-rounds 20                 # one part only
    .venv/bin/python benchmarks/load.py --source-rev HEAD ...   # serve a commit, not the working tree

Starts `symbiote serve` on a free loopback port and a temporary store (or --data), then the --phases:
  load    --http-clients streamable-HTTP and --sse-clients legacy-SSE clients connect (RSS idle vs.
          connected); the HTTP ones search only, then store only (--rate-seconds each), then all mix
          stores and searches for --duration seconds. A client whose session dies counts one failed
          request, is listed with the time, and reconnects (a legacy-SSE message POST that failed
          leaves the SDK's call in flight unanswered: it is watched and ended at once).
  batch   One client stores --batch memories (4 in flight) while another reads; the reader's p50/p95
          and the event-loop lag, idle vs. during the batch.
  cycles  --cycles connect/initialize/close cycles, a fifth over legacy SSE: RSS growth, and whether
          closed SSE sessions are released (their message URL answers 404; /health active_sessions).
  kill    SIGTERM once, then --kill-rounds rounds of kill -9, each at a random moment during HTTP and
          SSE writers. After each, a restart on the same store must say "ready" with an error-free boot
          log, hold every acknowledged write with its content, and find a sample by search.
Every acknowledged write is fetched back after its phase and once more at the end.

Event-loop lag: the latency of a GET only the router answers, every 20 ms from another process
(loadtest/probe.py), minus its idle median. Each figure is printed with the load average when it was
taken; --json FILE writes them all. Exit status 1 when an acknowledged write was lost.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from loadtest.clients import verify
from loadtest.phase_batch import phase_batch
from loadtest.phase_cycles import phase_cycles
from loadtest.phase_kill import phase_kill
from loadtest.phase_load import phase_load
from loadtest.report import header, summary
from loadtest.server import LoadServer, checkout


async def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    """The phases in order, then every acknowledged write checked once more: the figures."""
    phases = args.phases.split(",")
    data = args.data or workdir / "data"
    out: dict[str, Any] = {"started": time.strftime("%Y-%m-%d %H:%M:%S"), "args": vars(args) | {"data": str(data)}}
    source, out["source"] = checkout(args.source_rev, workdir)
    server = LoadServer(data, workdir / "server.log", source)
    ready = server.start()
    print(f"serving {out['source']} on {server.url}, ready in {ready:.1f} s; data {data}, log {server.log}")
    header(f"{os.cpu_count()} CPUs")
    acked: dict[str, str] = {}
    sampler = asyncio.create_task(server.sample_rss())
    try:
        if "load" in phases:
            acked |= await phase_load(args, server, out)
        if "batch" in phases:
            server.window = "batch"
            acked |= await phase_batch(args, server, out)
        if "cycles" in phases:
            server.window = "cycles"
            await phase_cycles(args, server, out)
        if "kill" in phases:
            server.window = "kill"
            acked |= await phase_kill(args, server, dict(acked), out)
        header(f"final check: every memory acknowledged in any phase ({len(acked)})")
        missing, unchecked = await verify(server.url, acked)
        print(f"  lost writes: {len(missing)} {missing[:5] or ''}  could not check: {len(unchecked)}")
        out["final"] = {"acked": len(acked), "lost": len(missing), "unchecked": len(unchecked)}
    finally:
        sampler.cancel()
        out["final_exit_code"] = server.stop()
        print(f"server stopped with SIGTERM: exit code {out['final_exit_code']}")
    out["rss_peak_bytes"] = max(server.peaks.values(), default=None)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add = parser.add_argument
    add("--phases", default="load,batch,cycles,kill", help="comma-separated: load,batch,cycles,kill")
    add("--duration", type=float, default=600, help="mixed-load seconds (default 600)")
    add("--rate-seconds", type=float, default=60, help="search-only and store-only seconds (default 60)")
    add("--http-clients", type=int, default=100)
    add("--sse-clients", type=int, default=20)
    add("--batch", type=int, default=1000, help="memories the batch client stores (default 1000)")
    add("--cycles", type=int, default=10_000, help="connect/disconnect cycles (default 10000)")
    add("--kill-rounds", type=int, default=20, help="rounds of kill -9 after the SIGTERM round (default 20)")
    add("--source-rev", help="serve the symbiote package of this git revision (e.g. HEAD), not the working tree")
    add("--data", type=Path, help="CHROMADB_PATH to use (default: a new temporary directory)")
    add("--json", type=Path, help="also write the figures to this file")
    add("--client-log", help="write the MCP client's warnings and errors here (default: silenced)")
    add("--keep", action="store_true", help="keep the temporary directory (server log, data)")
    args = parser.parse_args()
    if args.client_log:  # else silenced: a client whose server was killed logs stack traces
        logging.basicConfig(filename=args.client_log, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    logging.getLogger("mcp").setLevel(logging.WARNING if args.client_log else logging.CRITICAL)
    workdir = Path(tempfile.mkdtemp(prefix="symbiote-load-"))
    try:
        out = asyncio.run(run(args, workdir))
    finally:
        if args.keep:
            print(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    summary(out)
    if args.json:
        args.json.write_text(json.dumps(out, indent=2, default=str))
    lost = out["final"]["lost"] + sum(out.get(p, {}).get("lost", 0) for p in ("load", "batch", "sigterm", "kill"))
    return 1 if lost else 0


if __name__ == "__main__":
    raise SystemExit(main())
