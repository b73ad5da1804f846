"""What tracing costs a search: `symbiote serve` without an exporter and with one, interleaved.

One store is filled once; then each round starts the server twice on it, once without any
OTEL_* variable (the SDK is not even imported) and once with OTEL_EXPORTER_OTLP_ENDPOINT pointing
at an OTLP/HTTP receiver in this process (spans batched and sent as in production, metrics
exported more often than the default so that they too are sent during the timed searches), the order alternating from round to round because this
machine's speed moves from minute to minute. Each start: 20 warm-up searches, a pause, then
SEARCHES timed searches with the MCP SDK client over streamable HTTP. Prints p50 and p95 of
each mode, the server process's CPU time per search (the store's own process not counted), and
what the receiver got (so the exporting runs are shown to export).

Usage: .venv/bin/python benchmarks/telemetry_overhead.py [ROUNDS] [SEARCHES] [MEMORIES]
       (defaults 4, 100, 300)
"""

from __future__ import annotations

import asyncio
import os
import random
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from mcp import Client
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

# this directory is on sys.path when run as a script
from mcp_client import timed_calls
from percentiles import percentile
from server_process import ServerProcess

WORDS = (
    "project deadline coffee react python garden sister trip berlin budget meeting guitar running book "
    "movie dinner doctor train invoice holiday recipe football piano kitchen report launch client"
).split()


class Receiver:
    """An OTLP/HTTP endpoint that counts the spans and metric exports it is sent."""

    def __init__(self) -> None:
        self.spans = 0
        self.metric_exports = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                if self.path == "/v1/traces":
                    request = trace_service_pb2.ExportTraceServiceRequest.FromString(body)
                    outer.spans += sum(len(s.spans) for r in request.resource_spans for s in r.scope_spans)
                elif self.path == "/v1/metrics":
                    outer.metric_exports += 1
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - quiet
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def sentence(rng: random.Random, i: int) -> str:
    return f"Note {i}: the " + " ".join(rng.choice(WORDS) for _ in range(8)) + " matters this week."


async def fill(data: Path, memories: int) -> None:
    rng = random.Random(7)
    with ServerProcess(data, env={"LOG_LEVEL": "WARNING", "HF_HUB_OFFLINE": "1"}, stderr=subprocess.DEVNULL) as server:
        async with Client(server.mcp_url) as client:
            for start in range(0, memories, 50):
                items = [{"content": sentence(rng, i)} for i in range(start, min(memories, start + 50))]
                result = await client.call_tool("store_memories", {"memories": items})
                assert not result.is_error, result.content


def cpu_seconds(pid: int) -> float:
    """User + system CPU the process has used (Linux /proc): less sensitive than latency to what else
    the machine runs."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def one_run(data: Path, seed: int, searches: int, endpoint: str | None) -> tuple[list[float], float]:
    """The seconds each timed search took, and the server process's CPU seconds per search."""
    env = {"LOG_LEVEL": "WARNING", "HF_HUB_OFFLINE": "1"}
    if endpoint:
        env |= {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_METRIC_EXPORT_INTERVAL": "5000"}
    rng = random.Random(seed)
    with ServerProcess(data, env=env, stderr=subprocess.DEVNULL) as server:
        async with Client(server.mcp_url) as client:
            for i in range(20):
                await client.call_tool("search_memory", {"query": f"warm {i} {rng.choice(WORDS)}"})
            await asyncio.sleep(3)

            def query(i: int) -> dict[str, str]:
                return {"query": " ".join(rng.choice(WORDS) for _ in range(4)) + f" {i}"}

            assert server.proc is not None
            before = cpu_seconds(server.proc.pid)
            times = await timed_calls(client, "search_memory", query, searches)
            return times, (cpu_seconds(server.proc.pid) - before) / searches


async def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    searches = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    memories = int(sys.argv[3]) if len(sys.argv) > 3 else 300
    receiver = Receiver()
    with tempfile.TemporaryDirectory(prefix="symbiote-telemetry-") as tmp:
        data = Path(tmp) / "data"
        await fill(data, memories)
        times: dict[str, list[float]] = {"without exporter": [], "with OTLP exporter": []}
        cpu: dict[str, list[float]] = {name: [] for name in times}
        for index in range(rounds):
            modes = [None, receiver.endpoint] if index % 2 == 0 else [receiver.endpoint, None]
            for endpoint in modes:
                name = "with OTLP exporter" if endpoint else "without exporter"
                run, cpu_per_search = await one_run(data, index, searches, endpoint)
                times[name] += run
                cpu[name].append(cpu_per_search)
                print(
                    f"  round {index + 1}, {name:<20} p50 {percentile(run, 50) * 1000:6.2f} ms, "
                    f"server CPU {cpu_per_search * 1000:5.2f} ms per search",
                    flush=True,
                )
    print(f"search_memory over streamable HTTP, {memories} memories, {rounds} rounds x {searches} searches per mode")
    for name, values in times.items():
        p50, p95 = percentile(values, 50), percentile(values, 95)
        assert p50 is not None and p95 is not None
        mean_cpu = sum(cpu[name]) / len(cpu[name])
        print(
            f"  {name:<20} p50 {p50 * 1000:6.2f} ms   p95 {p95 * 1000:6.2f} ms   "
            f"server CPU {mean_cpu * 1000:5.2f} ms per search   n={len(values)}"
        )
    print(f"  receiver got {receiver.spans} spans and {receiver.metric_exports} metric exports")


if __name__ == "__main__":
    asyncio.run(main())
