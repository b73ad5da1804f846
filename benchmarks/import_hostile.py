"""The import probe's sizes against a running server's console: many refused lines, one huge line.

    .venv/bin/python benchmarks/import_hostile.py --port 8000 --pid <server pid> [--lines 20000000] [--line-mib 1024]

Uploads `--lines` lines of `{}` (each refused) through the console's import and times the import
while `/health` is asked every 50 ms; then a file holding one `--line-mib` MiB line between two
good ones, sampling the server's resident memory while it is imported. Prints JSON. The console
must be open to this client: a loopback server with auth off. Bounded: each phase stops after
`--timeout` seconds.
"""

from __future__ import annotations

import argparse
import json
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

PART = 2 * 1024 * 1024


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class Console:
    def __init__(self, base: str) -> None:
        self.http = httpx.Client(base_url=f"{base}/console", timeout=120)
        page = self.http.get("/transfer").text
        self.csrf = {"X-CSRF-Token": page.split('name="csrf-token" content="')[1].split('"')[0]}

    def upload(self, parts: Iterator[bytes]) -> str:
        job = self.http.post("/import", headers=self.csrf).json()["job"]
        for part in parts:
            answer = self.http.post(f"/import/{job}/part", content=part, headers=self.csrf)
            answer.raise_for_status()
        return job

    def run(self, job: str, timeout: float) -> tuple[float, str]:
        started = time.perf_counter()
        self.http.post(f"/import/{job}/start", headers=self.csrf).raise_for_status()
        while time.perf_counter() - started < timeout:
            page = self.http.get(f"/import/{job}").text
            if re.search(r'data-state="(done|failed)"', page):
                return time.perf_counter() - started, page
            time.sleep(0.2)
        raise TimeoutError("the import did not finish")


def refused_lines(lines: int) -> Iterator[bytes]:
    per_part = PART // 3
    for start in range(0, lines, per_part):
        yield b"{}\n" * min(per_part, lines - start)


def one_long_line(mib: int) -> Iterator[bytes]:
    yield b'{"kind":"memory","content":"A good line before the long one."}\n{"kind":"memory","content":"'
    for _ in range(mib // 2):
        yield b"x" * PART
    yield b'"}\n{"kind":"memory","content":"A good line after the long one."}\n'


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--pid", type=int, required=True)
    parser.add_argument("--lines", type=int, default=20_000_000)
    parser.add_argument("--line-mib", type=int, default=1020)  # the console takes files up to 1 GiB
    parser.add_argument("--timeout", type=float, default=600)
    args = parser.parse_args()
    base = f"http://127.0.0.1:{args.port}"
    console = Console(base)
    result: dict[str, object] = {}

    job = console.upload(refused_lines(args.lines))
    latencies: list[float] = []
    done = threading.Event()

    def watch() -> None:
        with httpx.Client(timeout=120) as http:
            while not done.is_set():
                started = time.perf_counter()
                http.get(f"{base}/health").raise_for_status()
                latencies.append(time.perf_counter() - started)
                time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        took, page = console.run(job, args.timeout)
    finally:
        done.set()
        watcher.join()
    ordered = sorted(latencies)
    result["refused_lines"] = {
        "lines": args.lines,
        "import_s": round(took, 1),
        "health_checks": len(ordered),
        "health_median_ms": round(ordered[len(ordered) // 2] * 1000, 1),
        "health_max_ms": round(ordered[-1] * 1000, 1),
        "refused": re.search(r'count-refused">(\d+)<', page).group(1),  # type: ignore[union-attr]
    }

    job = console.upload(one_long_line(args.line_mib))
    before = rss_mib(args.pid)
    peak = [before]
    sampling = True

    def sample() -> None:
        while sampling:
            peak.append(rss_mib(args.pid))
            time.sleep(0.05)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        took, page = console.run(job, args.timeout)
    finally:
        sampling = False
        sampler.join()
    result["long_line"] = {
        "mib": args.line_mib,
        "import_s": round(took, 1),
        "rss_before_mib": round(before),
        "rss_peak_mib": round(max(peak)),
        "added": re.search(r'count-added">(\d+)<', page).group(1),  # type: ignore[union-attr]
        "refused": re.findall(r"<li>(line \d+: [^<]*)</li>", page),
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
