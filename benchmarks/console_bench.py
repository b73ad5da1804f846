"""The console and export/import at 10,000 memories: paging, export, import. Prints figures,
asserts nothing (targets: a page < 200 ms, export < 10 s, import < 2 min).

1. `symbiote import` of a generated 10,000-memory file into an empty store (embeds every text);
2. `symbiote serve` on it: console pages (first, middle, last, filtered by tag, type and dates)
   fetched over HTTP, p50 / p95; then the console's export download (streamed);
3. `symbiote export --with-vectors` (server stopped), then `symbiote import` of that file into
   another empty store (the vectors are reused, nothing is embedded).

    .venv/bin/python benchmarks/console_bench.py [--memories 10000] [--requests 30]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import httpx
from percentiles import percentile
from server_process import MODEL_DIR, ServerProcess, symbiote_command

SUBJECTS = [
    "Maya",
    "Jonas",
    "the Atlas project",
    "the billing service",
    "the garden",
    "the Berlin office",
    "the car",
    "grandma Ruth",
    "the home server",
    "the marathon plan",
    "the kitchen",
    "Lee's visa",
]
VERBS = [
    "needs",
    "prefers",
    "was moved to",
    "depends on",
    "should avoid",
    "is scheduled for",
    "costs",
    "was replaced by",
    "is waiting for",
    "came back from",
]
OBJECTS = [
    "PostgreSQL 16",
    "Tuesday mornings",
    "a new laptop",
    "oat milk",
    "the 14:30 train",
    "Rust",
    "a quieter room",
    "weekly reviews",
    "blue paint",
    "a 2 TB disk",
    "the dentist",
    "Lisbon",
]
TAGS = ["work", "family", "health", "home", "travel", "atlas", "finance", "garden", "sport", "tools"]
TYPES = ["fact", "preference", "project", "decision", "personal"]


def generate(path: Path, count: int) -> None:
    """A Symbiote export without ids or vectors: realistic short memories, one a minute."""
    rnd = random.Random(16)
    start = 1_750_000_000_000_000
    with path.open("w", encoding="utf-8") as out:
        out.write(
            json.dumps(
                {
                    "format": "symbiote-memories",
                    "version": 1,
                    "model": "all-MiniLM-L6-v2",
                    "dimension": 384,
                    "counts": {"memories": count},
                }
            )
            + "\n"
        )
        for i in range(count):
            created = start + i * 60_000_000
            text = f"{rnd.choice(SUBJECTS).capitalize()} {rnd.choice(VERBS)} {rnd.choice(OBJECTS)} (note {i})."
            if i % 7 == 0:
                text += f" {rnd.choice(SUBJECTS).capitalize()} {rnd.choice(VERBS)} {rnd.choice(OBJECTS)}."
            record = {
                "kind": "memory",
                "content": text,
                "tags": rnd.sample(TAGS, 2),
                "type": rnd.choice(TYPES),
                "created": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(created // 1_000_000)) + "Z",
            }
            out.write(json.dumps(record) + "\n")


def cli(data: Path, *args: str) -> tuple[float, str]:
    env = {**os.environ, "CHROMADB_PATH": str(data), "SYMBIOTE_MODEL_DIR": str(MODEL_DIR), "HF_HUB_OFFLINE": "1"}
    started = time.perf_counter()
    done = subprocess.run([*symbiote_command(), *args], env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"symbiote {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return elapsed, done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""


def pages(server: ServerProcess, requests: int, total: int) -> None:
    last = max(1, -(-total // 25))
    cases = {
        "first page": "",
        "middle page": f"?page={last // 2}",
        "last page": f"?page={last}",
        "tag filter, page 3": "?tag=garden&page=3",
        "tag in another case": "?tag=GARDEN&page=3",
        "type filter, page 5": "?type=decision&page=5",
        "date range": "?from=2025-06-20&to=2025-06-22",
        "statistics": "stats",
        "history": "history",
    }
    with httpx.Client(base_url=server.url, timeout=60) as http:
        started = time.perf_counter()
        http.get("/console/")  # the session cookie, the store opened, the tags counted (one scan)
        print(f"  {'first request':<22} {(time.perf_counter() - started) * 1000:6.1f} ms")
        for name, query in cases.items():
            times = []
            for _ in range(requests):
                started = time.perf_counter()
                response = http.get(f"/console/{query}")
                times.append((time.perf_counter() - started) * 1000)
                response.raise_for_status()
            marked = response.text.split('<span class="count">')
            count = marked[1].split("<")[0].strip() if len(marked) > 1 else "-"
            print(f"  {name:<22} p50 {percentile(times, 50):6.1f} ms  p95 {percentile(times, 95):6.1f} ms  ({count})")


def download(server: ServerProcess, target: Path) -> float:
    started = time.perf_counter()
    with httpx.Client(base_url=server.url, timeout=120) as http, http.stream("GET", "/console/export") as response:
        response.raise_for_status()
        with target.open("wb") as out:
            for chunk in response.iter_bytes():
                out.write(chunk)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=30, help="requests per console page measured")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="symbiote-console-bench-"))
    try:
        source = work / "memories.jsonl"
        generate(source, args.memories)
        print(f"{args.memories} memories ({source.stat().st_size / 1e6:.1f} MB file)")
        elapsed, summary = cli(work / "a", "import", str(source))
        print(f"symbiote import (embeds every text): {elapsed:.1f} s   {summary}   target < 120 s")

        server = ServerProcess(
            work / "a", env={"SYMBIOTE_MODEL_DIR": str(MODEL_DIR), "HF_HUB_OFFLINE": "1"}, log=work / "server.log"
        )
        server.start()
        try:
            print(f"console pages over HTTP, {args.requests} requests each (target < 200 ms):")
            pages(server, args.requests, args.memories)
            seconds = download(server, work / "download.jsonl")
            lines = sum(1 for _ in (work / "download.jsonl").open("rb")) - 1
            print(
                f"console export download (streamed, server running): {seconds:.2f} s, {lines} memories   target < 10 s"
            )
        finally:
            server.stop()

        exported = work / "export.jsonl"
        elapsed, _ = cli(work / "a", "export", "--out", str(exported))
        print(f"symbiote export: {elapsed:.2f} s ({exported.stat().st_size / 1e6:.1f} MB)   target < 10 s")
        elapsed, _ = cli(work / "a", "export", "--out", str(exported), "--with-vectors")
        print(f"symbiote export --with-vectors: {elapsed:.2f} s ({exported.stat().st_size / 1e6:.1f} MB)")
        elapsed, summary = cli(work / "b", "import", str(exported))
        print(f"symbiote import of that export (vectors reused): {elapsed:.1f} s   {summary}")
        elapsed, summary = cli(work / "b", "import", str(exported))
        print(f"the same import again (adds nothing): {elapsed:.1f} s   {summary}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
