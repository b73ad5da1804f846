"""Strangers who hold sockets without finishing a request head, and the owner's requests meanwhile.

    .venv/bin/python benchmarks/stalled_connections.py --port 8000 --sockets 20000 --seconds 30

Opens `--sockets` connections to a running server, each sending half a request head and then
nothing, and reopens each one the server closes, for `--seconds` (bounded: it stops by itself);
meanwhile the owner asks `/health` (and `/mcp` with `--key`) every 0.2 s on a fresh connection and
its latencies are printed, with the server's open files when `--pid` is given. Loopback only. The
sockets are spread over `--workers` processes, each raising its own open-file limit.
`--strangers-only` leaves the owner out (tests/http/test_connections.py times the owner
itself against a small cap).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import resource
import statistics
import sys
import time

PARTIAL_HEAD = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Waiting: "
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "owner", "version": "1"}},
}


async def hold(port: int, sockets: int, seconds: float, opened: multiprocessing.Value | None = None) -> int:
    """Keep `sockets` half-open requests for `seconds`, reopening each one closed; connections made."""
    deadline = time.monotonic() + seconds
    made = 0

    async def one() -> None:
        nonlocal made
        while time.monotonic() < deadline:
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.write(PARTIAL_HEAD)
            except OSError:
                await asyncio.sleep(0.05)
                continue
            made += 1
            if opened is not None:
                with opened.get_lock():
                    opened.value += 1
            try:
                await asyncio.wait_for(reader.read(1), max(0.01, deadline - time.monotonic()))
            except (TimeoutError, OSError):
                pass
            writer.close()

    await asyncio.gather(*(one() for _ in range(sockets)))
    return made


def _worker(port: int, sockets: int, seconds: float, opened: multiprocessing.Value) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    asyncio.run(hold(port, sockets, seconds, opened))


def open_files(pid: int | None) -> int | None:
    return len(os.listdir(f"/proc/{pid}/fd")) if pid else None


async def owner(port: int, seconds: float, key: str | None, pid: int | None) -> dict[str, object]:
    import httpx

    health, mcp, files = [], [], []
    failures = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10) as http:
            try:
                started = time.perf_counter()
                assert (await http.get("/health")).status_code == 200
                health.append(time.perf_counter() - started)
                if key:
                    started = time.perf_counter()
                    answer = await http.post(
                        "/mcp",
                        json=INITIALIZE,
                        headers={"Authorization": f"Bearer {key}", "Accept": "application/json, text/event-stream"},
                    )
                    assert answer.status_code == 200, answer.status_code
                    mcp.append(time.perf_counter() - started)
            except (httpx.HTTPError, AssertionError):
                failures += 1
        files.append(open_files(pid))
        await asyncio.sleep(0.2)

    def ms(values: list[float]) -> dict[str, float]:
        if not values:
            return {}
        ordered = sorted(values)
        return {
            "n": len(values),
            "median_ms": round(statistics.median(ordered) * 1000, 1),
            "p95_ms": round(ordered[int(len(ordered) * 0.95) - 1] * 1000, 1),
            "max_ms": round(ordered[-1] * 1000, 1),
        }

    known = [f for f in files if f is not None]
    return {
        "health": ms(health),
        "mcp": ms(mcp),
        "owner_failures": failures,
        "server_open_files_max": max(known) if known else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--sockets", type=int, default=20000)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--key", help="an API key: the owner's /mcp is timed too")
    parser.add_argument("--pid", type=int, help="the server's process id: its open files are counted")
    parser.add_argument("--strangers-only", action="store_true", help="no owner: only hold sockets for --seconds")
    parser.add_argument(
        "--until-eof",
        action="store_true",
        help="strangers only, held until standard input closes instead of for --seconds; prints `holding` "
        "once every socket is open and `reopened` once the server has closed one and it was opened again",
    )
    args = parser.parse_args()
    if args.until_eof:
        args.strangers_only, args.seconds = True, 24 * 3600.0
    opened = multiprocessing.Value("l", 0)
    per = args.sockets // args.workers
    settle = 0.0 if args.strangers_only else 10.0  # the strangers' sockets are open before the owner comes
    workers = [
        multiprocessing.Process(target=_worker, args=(args.port, per, args.seconds + settle, opened))
        for _ in range(args.workers)
    ]
    for process in workers:
        process.start()
    time.sleep(settle)
    report = {} if args.strangers_only else asyncio.run(owner(args.port, args.seconds, args.key, args.pid))
    if args.until_eof:
        for said, count in (("holding", per * args.workers), ("reopened", per * args.workers + 1)):
            while opened.value < count and all(process.is_alive() for process in workers):
                time.sleep(0.05)
            print(said, flush=True)
        sys.stdin.read()
        for process in workers:
            process.terminate()
    for process in workers:
        process.join()
    report["stranger_connections_made"] = opened.value
    report["sockets"] = per * args.workers
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
