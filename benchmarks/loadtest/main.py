"""Running the load benchmark: its options, the phases in order, the final check, the figures."""

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

from loadtest.calls import verify
from loadtest.figures import header, loadavg
from loadtest.phase_batch import phase_batch
from loadtest.phase_cycles import phase_cycles
from loadtest.phase_kill import phase_kill
from loadtest.phase_load import phase_load
from loadtest.probe import probe_main
from loadtest.report import summary
from loadtest.server import LoadServer, RssSampler, checkout


async def run(args: argparse.Namespace) -> int:
    phases = [p.strip() for p in args.phases.split(",") if p.strip()]
    workdir = Path(tempfile.mkdtemp(prefix="symbiote-load-"))
    data = args.data or workdir / "data"
    out: dict[str, Any] = {
        "started": time.strftime("%Y-%m-%d %H:%M:%S"),
        "args": vars(args) | {"data": str(data)},
        "cpus": os.cpu_count(),
        "loadavg_start": loadavg(),
    }
    source, out["source"] = checkout(args.source_rev, workdir)
    print(f"serving symbiote from {out['source']}")
    server = LoadServer(data, workdir / "server.log", args.log_level, source)
    print(f"data {data}; server log {server.log_path}; {os.cpu_count()} CPUs; load average {loadavg()}")
    ready = server.start()
    print(f"server on {server.url} (pid {server.proc.pid}), ready in {ready:.1f} s")  # type: ignore[union-attr]
    acked: dict[str, str] = {}
    try:
        with RssSampler(server) as sampler:
            if "load" in phases:
                acked.update(await phase_load(args, server, sampler, out))
            if "batch" in phases:
                sampler.window = "batch"
                acked.update(await phase_batch(args, server, out))
            if "cycles" in phases:
                sampler.window = "cycles"
                await phase_cycles(args, server, out)
            if "kill" in phases:
                sampler.window = "kill"  # the sampler follows the server object across restarts
                acked.update(await phase_kill(args, server, dict(acked), out))
        header(f"final check: every memory acknowledged in any phase ({len(acked)})")
        missing, unchecked = await verify(server.url, acked)
        print(f"  lost writes: {len(missing)}   could not check: {len(unchecked)}")
        out["final"] = {"acked": len(acked), "lost": len(missing), "unchecked": len(unchecked)}
        if missing:
            print(f"  first missing ids: {missing[:5]}")
    finally:
        code = server.stop()
        print(f"server stopped with SIGTERM: exit code {code}")
        out["final_exit_code"] = code
    out["rss_peak_bytes"] = max(sampler.peaks.values(), default=None)
    summary(out)
    lost = out["final"]["lost"] + out.get("load", {}).get("lost", 0) + out.get("batch", {}).get("lost", 0)
    lost += out.get("kill_lost_including_sigterm", 0)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2, default=str))
        print(f"figures written to {args.json}")
    if args.keep:
        print(f"kept {workdir}")
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    return 1 if lost else 0


def _parser(description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--phases", default="load,batch,cycles,kill", help="comma-separated: load,batch,cycles,kill")
    parser.add_argument("--duration", type=float, default=600, help="mixed-load seconds (default 600)")
    parser.add_argument(
        "--rate-seconds", type=float, default=60, help="search-only and store-only windows (default 60)"
    )
    parser.add_argument("--http-clients", type=int, default=100)
    parser.add_argument("--sse-clients", type=int, default=20)
    parser.add_argument(
        "--store-share", type=float, default=0.3, help="share of stores in the mixed load (default 0.3)"
    )
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--batch-concurrency", type=int, default=4, help="store calls in flight from the batch client")
    parser.add_argument("--baseline-seconds", type=float, default=15)
    parser.add_argument("--cycles", type=int, default=10_000)
    parser.add_argument(
        "--sse-share", type=float, default=0.2, help="share of the cycles over legacy SSE (default 0.2)"
    )
    parser.add_argument("--cycle-concurrency", type=int, default=8)
    parser.add_argument("--cycles-time-limit", type=float, default=3600)
    parser.add_argument("--settle-seconds", type=float, default=35, help="wait before the final RSS/session reading")
    parser.add_argument("--kill-rounds", type=int, default=20)
    parser.add_argument("--kill-writers", type=int, default=8)
    parser.add_argument("--kill-sse-writers", type=int, default=2, help="how many of the writers use legacy SSE")
    parser.add_argument("--kill-after-min", type=float, default=1.0)
    parser.add_argument("--kill-after-max", type=float, default=5.0)
    parser.add_argument("--search-sample", type=int, default=10, help="acknowledged memories searched per round")
    parser.add_argument(
        "--source-rev", help="serve the symbiote package of this git revision (e.g. HEAD) instead of the working tree"
    )
    parser.add_argument("--data", type=Path, help="CHROMADB_PATH to use (default: a new temporary directory)")
    parser.add_argument("--log-level", default="INFO")
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--client-log", help="write the MCP client's warnings and errors here (default: silenced)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory (server log, data)")
    parser.add_argument("--probe", help=argparse.SUPPRESS)
    parser.add_argument("--probe-interval", type=float, default=0.02, help=argparse.SUPPRESS)
    return parser


def main(description: str) -> int:
    """Parse the command line and run; `description` heads --help. Exit status 1 when a write was lost."""
    logging.getLogger("mcp").setLevel(logging.CRITICAL)  # a client whose server was killed logs stack traces
    args = _parser(description).parse_args()
    if args.probe:
        probe_main(args.probe, args.probe_interval)
        return 0
    if args.client_log:
        handler = logging.FileHandler(args.client_log)
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
        mcp_log = logging.getLogger("mcp")
        mcp_log.addHandler(handler)
        mcp_log.setLevel(logging.WARNING)
        mcp_log.propagate = False  # the file only, not stderr
    return asyncio.run(run(args))
