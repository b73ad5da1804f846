"""The load phase: 100 streamable-HTTP and 20 legacy-SSE clients stay connected through a search-only,
a store-only and a mixed window; idle vs. connected RSS, rates, latencies, failures, lost writes.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import resource
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from loadtest.calls import Tally, call, search, stats, store, verify
from loadtest.figures import header, lat_summary, lat_text, loadavg, mb
from loadtest.probe import LagProbe
from loadtest.server import LoadServer, RssSampler
from loadtest.transports import CALL_TIMEOUT, error_text, http_client, legacy_sse_client, session_gone
from loadtest.workload import Texts


@dataclass
class Gate:
    """What the long-lived clients do next; they wait on these events in order."""

    connected: int = 0
    connect_failed: int = 0
    broken: int = 0
    broken_by_kind: Counter[str] = field(default_factory=Counter)
    losses: list[str] = field(default_factory=list)  # "HH:MM:SS kind+index: why", to find in the server log
    finished: Counter[str] = field(default_factory=Counter)
    events: dict[str, asyncio.Event] = field(default_factory=dict)
    deadline: float = 0.0
    tally: Tally | None = None

    def event(self, name: str) -> asyncio.Event:
        return self.events.setdefault(name, asyncio.Event())


async def long_lived_client(kind: str, index: int, url: str, gate: Gate, store_share: float) -> None:
    """One client for the whole load phase; a client whose session breaks counts a failure and reconnects."""
    rng = random.Random(f"{kind}-{index}")
    texts = Texts(f"{kind}{index}")
    phases = ["search", "store", "mixed", "close"]
    step = 0
    counted = False
    for _attempt in range(30):  # bounded reconnects
        client = http_client(url) if kind == "http" else legacy_sse_client(url)
        in_tally = False  # whether the failure is counted already (as the call that found the session dead)
        try:
            async with client:
                if not counted:
                    await call(client, None, "ping", "memory_stats", {})  # one real request each
                    gate.connected += 1
                    counted = True
                while step < len(phases):
                    phase = phases[step]
                    await gate.event(phase).wait()
                    if phase == "close":
                        return
                    tally = gate.tally
                    assert tally is not None
                    while (phase == "mixed" or kind == "http") and time.monotonic() < gate.deadline:
                        suffix = f"/{kind}" if phase == "mixed" else ""
                        if phase == "search" or (phase == "mixed" and rng.random() >= store_share):
                            await search(client, tally, rng, "search" + suffix)
                        else:
                            await store(client, tally, texts, "store" + suffix)
                    gate.finished[phase] += 1
                    step += 1
                    await gate.event(phase + "-done").wait()
            # leaving `async with` without reaching "close": the SDK ended the session under us
            # (a transport error cancels the call in flight instead of raising it)
            what = "client session ended unexpectedly (call in flight cancelled)"
        except Exception as exc:
            gone = session_gone(exc)
            what = f"session dead: {gone}"[:200] if gone is not None else error_text(exc)[:200]
            in_tally = gone is not None and gone.counted
        if not counted:
            gate.connect_failed += 1
            print(f"  client {kind}{index} could not connect: {what}", flush=True)
            return
        gate.broken += 1
        gate.broken_by_kind[kind] += 1
        gate.losses.append(f"{time.strftime('%H:%M:%S')} {kind}{index}: {what}")
        if gate.tally is not None and not in_tally:
            gate.tally.fail(f"session/{kind}", what)
        print(f"  client {kind}{index} broke ({what}); reconnecting", flush=True)
    gate.finished["gave-up"] += 1


def _own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def _connect(
    args: argparse.Namespace, server: LoadServer, gate: Gate
) -> tuple[list[asyncio.Task[None]], dict[str, Any]]:
    """Warm the server, read its idle RSS, connect every client; the clients' tasks and the RSS figures."""
    url = server.url
    # warm: the model loaded and one write done, so idle RSS is the steady idle state
    warm = Tally("warm")
    async with http_client(url) as client:
        await store(client, warm, Texts("warm"))
        await search(client, warm, random.Random(0))
    await asyncio.sleep(3)
    rss_idle = server.rss()
    print(f"server RSS idle (model loaded, no client connected): {mb(rss_idle)}")

    total = args.http_clients + args.sse_clients
    tasks = []
    for i in range(args.http_clients):
        tasks.append(asyncio.create_task(long_lived_client("http", i, url, gate, args.store_share)))
    for i in range(args.sse_clients):
        tasks.append(asyncio.create_task(long_lived_client("sse", i, url, gate, args.store_share)))
    connect_deadline = time.monotonic() + 120
    while gate.connected + gate.connect_failed < total and time.monotonic() < connect_deadline:
        await asyncio.sleep(0.2)
    await asyncio.sleep(2)
    rss_connected = server.rss()
    sessions_connected = server.health().get("active_sessions")
    print(
        f"{gate.connected}/{total} clients connected ({gate.connect_failed} failed to connect); "
        f"server RSS {mb(rss_connected)}; /health active_sessions {sessions_connected}  [load {loadavg()}]"
    )
    per_conn = None
    if rss_idle and rss_connected and gate.connected:
        per_conn = (rss_connected - rss_idle) / gate.connected
        print(f"RSS per extra connection (connected - idle) / {gate.connected}: {per_conn / 1024:.0f} KB")

    results: dict[str, Any] = {
        "rss_idle_bytes": rss_idle,
        "rss_connected_bytes": rss_connected,
        "connected": gate.connected,
        "connect_failed": gate.connect_failed,
        "rss_per_connection_bytes": per_conn,
        "health_sessions_connected": sessions_connected,
        "warm_acked": warm.acked,
    }
    return tasks, results


async def _window(
    args: argparse.Namespace,
    server: LoadServer,
    sampler: RssSampler,
    gate: Gate,
    tasks: list[asyncio.Task[None]],
    phase: str,
    seconds: float,
) -> tuple[Tally, dict[str, Any]]:
    """Let the clients run `phase` for `seconds`, wait for the calls in flight, print and return its figures."""
    tally = Tally(phase)
    gate.tally = tally
    gate.deadline = time.monotonic() + seconds
    sampler.window = f"load-{phase}"
    probe = LagProbe(server.url) if phase == "mixed" else None
    cpu0 = server.cpu_seconds()
    self0 = _own_cpu()
    tally.started = time.monotonic()
    tally.deadline = gate.deadline
    gate.event(phase).set()
    # wait for every live client to finish the call in flight at the deadline
    while time.monotonic() < gate.deadline + CALL_TIMEOUT + 5:
        await asyncio.sleep(0.25)
        if time.monotonic() >= gate.deadline and gate.finished[phase] >= sum(1 for t in tasks if not t.done()):
            break
    tally.close()
    cpu1 = server.cpu_seconds()
    self1 = _own_cpu()
    lag = probe.finish() if probe else None
    gate.event(phase + "-done").set()
    load = loadavg()
    total = args.http_clients + args.sse_clients
    who = f"{args.http_clients} HTTP clients" if phase != "mixed" else f"{total} clients"
    print(
        f"\n-- {phase} ({who}, {seconds:.0f} s; the last calls drained after {tally.seconds - seconds:.1f} s)"
        f"  [load average {load}]"
    )
    for op in sorted(tally.lat):
        print(f"  {op:<11} {tally.rate(op):7.1f} req/s   {lat_text(tally.lat[op])}")
    failed = sum(tally.failed.values())
    print(f"  failed requests: {failed}")
    for what, count in tally.errors.most_common(5):
        print(f"    {count} x {what}")
    if tally.timeouts:
        print(f"    timed out ({CALL_TIMEOUT:.0f} s without an answer): {tally.timeouts[:10]}")
    server_cores = None if cpu0 is None or cpu1 is None else (cpu1 - cpu0) / tally.seconds
    if server_cores is not None:
        print(
            f"  server CPU: {server_cores:.2f} cores; load generator CPU: {(self1 - self0) / tally.seconds:.2f} cores"
        )
    print(f"  server RSS peak: {mb(sampler.peaks.get(sampler.window))}")
    entry: dict[str, Any] = {
        "seconds": round(tally.seconds, 1),
        "loadavg": load,
        "rates": {op: round(tally.rate(op), 2) for op in tally.lat},
        "latency": {op: lat_summary(v) for op, v in tally.lat.items()},
        "failed": failed,
        "failed_by_op": dict(tally.failed),
        "errors": dict(tally.errors.most_common(10)),
        "timeouts": tally.timeouts[:20],
        "acked": len(tally.acked),
        "rss_peak_bytes": sampler.peaks.get(sampler.window),
        "server_cores": None if server_cores is None else round(server_cores, 2),
        "client_cores": round((self1 - self0) / tally.seconds, 2),
    }
    if lag is not None:
        entry["lag_probe"] = lat_summary(lag["lag_probe"])
        entry["health"] = lat_summary(lag["health"])
        print(f"  GET /__lag_probe latency: {lat_text(lag['lag_probe'])};  GET /health: {lat_text(lag['health'])}")
    return tally, entry


async def phase_load(
    args: argparse.Namespace, server: LoadServer, sampler: RssSampler, out: dict[str, Any]
) -> dict[str, str]:
    url = server.url
    header(f"load: {args.http_clients} streamable-HTTP + {args.sse_clients} legacy-SSE clients")
    gate = Gate()
    tasks, results = await _connect(args, server, gate)
    acked: dict[str, str] = dict(results.pop("warm_acked"))
    for phase, seconds in (("search", args.rate_seconds), ("store", args.rate_seconds), ("mixed", args.duration)):
        if seconds <= 0:
            gate.event(phase).set()
            gate.event(phase + "-done").set()
            continue
        tally, results[phase] = await _window(args, server, sampler, gate, tasks, phase, seconds)
        acked.update(tally.acked)
    gate.event("close").set()
    await asyncio.wait(tasks, timeout=60)
    sampler.window = "after-load"
    results["sessions_broken"] = gate.broken
    results["sessions_broken_by_kind"] = dict(gate.broken_by_kind)
    results["session_losses"] = gate.losses[:50]
    print(
        f"client sessions that broke mid-run (each counted once as a failed request, then reconnected): "
        f"{gate.broken} (HTTP {gate.broken_by_kind['http']}, SSE {gate.broken_by_kind['sse']})"
    )
    for line in gate.losses[:20]:
        print(f"    {line}")

    print(f"\nverifying {len(acked)} acknowledged writes with get_memory ...", flush=True)
    missing, unchecked = await verify(url, acked)
    figures = await stats(url)
    print(
        f"  lost writes: {len(missing)}   could not check: {len(unchecked)}   "
        f"memory_stats.total_memories {figures.get('total_memories')} (acknowledged here: {len(acked)})"
    )
    results.update(
        lost=len(missing), unchecked=len(unchecked), acked=len(acked), total_memories=figures.get("total_memories")
    )
    out["load"] = results
    return acked
