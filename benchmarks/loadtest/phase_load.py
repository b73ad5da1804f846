"""The load phase: streamable-HTTP and legacy-SSE clients stay connected through a search-only, a
store-only and a mixed window, as real assistants hold sessions open; RSS idle vs. connected, rates,
latencies, failures, sessions lost, lost writes."""

from __future__ import annotations

import argparse
import asyncio
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from loadtest import clients
from loadtest.report import header, loadavg, mb
from loadtest.server import LagProbe, LoadServer

STORE_SHARE = 0.3  # of the calls in the mixed window
WINDOWS = ("search", "store", "mixed")  # the SSE clients only take part in the mixed one


@dataclass
class Gate:
    """The window the long-lived clients are in, and what happened to their sessions."""

    tally: clients.Tally = field(default_factory=clients.Tally)
    deadline: float = 0.0
    opened: dict[str, asyncio.Event] = field(default_factory=lambda: {w: asyncio.Event() for w in (*WINDOWS, "close")})
    finished: Counter[str] = field(default_factory=Counter)
    connected: int = 0
    connect_failed: int = 0
    lost: Counter[str] = field(default_factory=Counter)  # sessions that died, by kind
    losses: list[str] = field(default_factory=list)  # "HH:MM:SS kind+index: why", to find in the server log


async def _client(kind: str, index: int, url: str, gate: Gate) -> None:
    """One client for the whole phase. A session that dies counts as one failed request, is listed with
    the time, and the client reconnects and goes on in the same window."""
    rng, texts = random.Random(f"{kind}-{index}"), clients.texts(f"{kind}{index}")
    step, connected = 0, False
    for _attempt in range(30):  # bounded reconnects
        what, counted = "client session ended unexpectedly (the call in flight was cancelled)", False
        try:
            async with clients.Session(url, kind) as session:
                if not connected:
                    await clients.call(session, clients.Tally(), "ping", "memory_stats", {})  # one real request each
                    connected = True
                    gate.connected += 1
                for window in WINDOWS[step:]:
                    await gate.opened[window].wait()
                    suffix = f"/{kind}" if window == "mixed" else ""
                    while (window == "mixed" or kind == "http") and time.monotonic() < gate.deadline:
                        if window == "search" or (window == "mixed" and rng.random() >= STORE_SHARE):
                            await clients.search(session, gate.tally, rng, "search" + suffix)
                        else:
                            await clients.store(session, gate.tally, texts, "store" + suffix)
                    gate.finished[window] += 1
                    step += 1
                await gate.opened["close"].wait()
                return
            # here the SDK ended the session under us: a transport error cancels the call in flight
        except Exception as exc:  # noqa: BLE001 - a broken client, whatever the cause, is printed below
            gone = clients.session_gone(exc)
            what, counted = (f"session dead: {gone}", True) if gone else (clients.error_text(exc), False)
        print(f"  client {kind}{index} {'broke' if connected else 'could not connect'}: {what[:200]}", flush=True)
        if not connected:
            gate.connect_failed += 1
            return
        gate.lost[kind] += 1
        gate.losses.append(f"{time.strftime('%H:%M:%S')} {kind}{index}: {what[:200]}")
        if not counted:
            gate.tally.fail(f"session/{kind}", what)


async def _connect(
    args: argparse.Namespace, server: LoadServer, gate: Gate
) -> tuple[list[asyncio.Task[None]], dict[str, Any]]:
    """Warm the server, read its idle RSS, connect every client: their tasks, the RSS figures."""
    warm = clients.Tally()
    async with clients.Session(server.url) as session:  # the model loaded and one write done: the steady idle state
        await clients.store(session, warm, clients.texts("warm"))
        await clients.search(session, warm, random.Random(0))
    await asyncio.sleep(3)
    rss_idle = server.rss()
    print(f"server RSS idle (model loaded, no client connected): {mb(rss_idle)}")
    kinds = [("http", i) for i in range(args.http_clients)] + [("sse", i) for i in range(args.sse_clients)]
    tasks = [asyncio.create_task(_client(kind, i, server.url, gate)) for kind, i in kinds]
    deadline = time.monotonic() + 120
    while gate.connected + gate.connect_failed < len(kinds) and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    await asyncio.sleep(2)
    rss, sessions = server.rss(), server.health().get("active_sessions")
    per = (rss - rss_idle) / gate.connected if rss and rss_idle and gate.connected else None
    print(
        f"{gate.connected}/{len(kinds)} clients connected ({gate.connect_failed} failed to connect); server RSS "
        f"{mb(rss)}, {'-' if per is None else f'{per / 1024:.0f} KB'} per connection; "
        f"/health active_sessions {sessions}  [load {loadavg()}]"
    )
    figures = {"rss_idle_bytes": rss_idle, "rss_connected_bytes": rss, "rss_per_connection_bytes": per}
    figures |= {"connected": gate.connected, "connect_failed": gate.connect_failed, "warm_acked": warm.acked}
    return tasks, figures


async def _window(
    server: LoadServer, gate: Gate, tasks: list[asyncio.Task[None]], window: str, seconds: float
) -> tuple[dict[str, str], dict[str, Any]]:
    """Let the clients run `window` for `seconds` and end their calls in flight: its writes and figures."""
    gate.deadline = time.monotonic() + seconds
    gate.tally = tally = clients.Tally(deadline=gate.deadline)
    server.window = f"load-{window}"
    probe = LagProbe(server.url) if window == "mixed" else None
    cpu, own = server.cpu_seconds(), time.process_time()
    gate.opened[window].set()
    while time.monotonic() < gate.deadline + clients.CALL_TIMEOUT + 5:
        await asyncio.sleep(0.25)
        if time.monotonic() >= gate.deadline and gate.finished[window] >= sum(not t.done() for t in tasks):
            break
    tally.close()
    cpu, own = (server.cpu_seconds() - cpu) / tally.seconds, (time.process_time() - own) / tally.seconds
    peak = server.peaks.get(server.window)
    header(f"{window}: {seconds:.0f} s, the last calls drained after {tally.seconds - seconds:.1f} s")
    tally.print()
    print(f"  server CPU {cpu:.2f} cores, load generator {own:.2f}; server RSS peak {mb(peak)}")
    figures = tally.figures() | {"loadavg": loadavg(), "rss_peak_bytes": peak, "server_cores": round(cpu, 2)}
    if probe is not None:
        lag = probe.finish()
        for key in ("lag_probe", "health"):  # GET /__lag_probe, GET /health
            print(f"  GET {key:<10} {clients.latency_text(lag[key])}")
            figures[key] = clients.latency(lag[key])
    return tally.acked, figures


async def phase_load(args: argparse.Namespace, server: LoadServer, out: dict[str, Any]) -> dict[str, str]:
    """Run the windows; the writes acknowledged, after checking each is there."""
    header(f"load: {args.http_clients} streamable-HTTP + {args.sse_clients} legacy-SSE clients")
    gate = Gate()
    tasks, results = await _connect(args, server, gate)
    acked = results.pop("warm_acked")
    for window, seconds in zip(WINDOWS, (args.rate_seconds, args.rate_seconds, args.duration), strict=True):
        if seconds <= 0:
            gate.opened[window].set()  # the clients pass it by: its deadline has passed
            continue
        written, results[window] = await _window(server, gate, tasks, window, seconds)
        acked |= written
    gate.opened["close"].set()
    await asyncio.wait(tasks, timeout=60)
    server.window = "after-load"
    print(f"client sessions lost mid-run (each a failed request, then reconnected): {dict(gate.lost) or 0}")
    for line in gate.losses[:20]:
        print(f"    {line}")
    missing, unchecked = await clients.verify(server.url, acked)
    total = server.health().get("memories")
    print(f"lost writes: {len(missing)} of {len(acked)} (could not check {len(unchecked)}); memories {total}")
    results |= {"sessions_lost": dict(gate.lost), "session_losses": gate.losses[:50], "total_memories": total}
    out["load"] = results | {"lost": len(missing), "unchecked": len(unchecked), "acked": len(acked)}
    return acked
