"""The cycles phase: many connect/initialize/close cycles (a share over legacy SSE); whether RSS grows
and whether the server releases the SSE sessions.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx

from loadtest.figures import header, loadavg, mb
from loadtest.server import LoadServer
from loadtest.transports import CALL_TIMEOUT, EndpointLog, error_text, http_client, legacy_sse_client

JSON = {"content-type": "application/json"}


async def sse_message_url(url: str) -> tuple[str, str]:
    """Open one raw legacy-SSE stream and read its endpoint event: (the message URL's form, how it went).

    While the stream is open, a malformed POST to the session must answer 400; after it closes,
    404 once the server has released the session.
    """
    async with httpx.AsyncClient(timeout=30) as http:
        async with http.stream("GET", url + "/sse") as response:
            endpoint = ""
            async for line in response.aiter_lines():
                if line.startswith("data:"):
                    endpoint = line[5:].strip()
                    break
            target = httpx.URL(url).join(endpoint)
            sid = (
                target.params.get("session_id")
                or target.params.get("sessionId")
                or target.path.rstrip("/").rsplit("/", 1)[-1]
            )
            example = str(target).replace(sid, "{session}")
            open_status = (await http.post(str(target), content=b"{not json", headers=JSON)).status_code
        released_after = None
        started = time.monotonic()
        while time.monotonic() - started < 40:
            if (await http.post(str(target), content=b"{}", headers=JSON)).status_code == 404:
                released_after = time.monotonic() - started
                break
            await asyncio.sleep(0.25)
    note = f"open session answered {open_status}; closed session answered 404 after " + (
        f"{released_after:.2f} s" if released_after is not None else "never (40 s)"
    )
    return example, note


@dataclass
class Churn:
    """What the cycles did: how many, their failures, RSS along the way, what /health said, the SSE message URLs."""

    rss_marks: list[tuple[int, int | None]]
    done: int = 0
    seconds: float = 0.0
    failed: Counter[str] = field(default_factory=Counter)
    session_counts: list[int] = field(default_factory=list)
    endpoints: list[str] = field(default_factory=list)


async def _churn(args: argparse.Namespace, server: LoadServer, kinds: list[str], churn: Churn) -> None:
    """Run the cycles, `args.cycle_concurrency` at a time, within `args.cycles_time_limit`."""
    url = server.url
    queue = list(enumerate(kinds))
    started = time.monotonic()
    time_limit = args.cycles_time_limit

    async def watch_sessions() -> None:  # what /health says while the cycles run
        while True:
            with contextlib.suppress(httpx.HTTPError, ValueError):
                count = (await asyncio.to_thread(server.health)).get("active_sessions")
                if isinstance(count, int):
                    churn.session_counts.append(count)
            await asyncio.sleep(2)

    async def worker() -> None:
        while queue and time.monotonic() - started < time_limit:
            _, kind = queue.pop()
            client = http_client(url) if kind == "http" else legacy_sse_client(url)
            try:
                async with asyncio.timeout(CALL_TIMEOUT):
                    async with client:
                        pass
            except Exception as exc:
                churn.failed[f"{kind}: {error_text(exc)[:120]}"] += 1
            churn.done += 1
            if churn.done % max(1, args.cycles // 10) == 0:
                churn.rss_marks.append((churn.done, server.rss()))
                print(f"  {churn.done:>6} cycles  RSS {mb(churn.rss_marks[-1][1])}  [load {loadavg()}]", flush=True)

    watcher = asyncio.create_task(watch_sessions())
    with EndpointLog() as endpoints:
        await asyncio.gather(*(worker() for _ in range(args.cycle_concurrency)))
    watcher.cancel()
    churn.seconds = time.monotonic() - started
    churn.endpoints = endpoints.urls


async def _not_released(endpoints: list[str]) -> int:
    """How many of these SSE message URLs answer anything but 404 (a session the server still holds)."""
    still_open = 0
    async with httpx.AsyncClient(timeout=30) as http:
        for endpoint in endpoints:
            if (await http.post(endpoint, content=b"{}", headers=JSON)).status_code != 404:
                still_open += 1
    return still_open


def _growth(before: int | None, after: int | None) -> float | None:
    return None if not (before and after) else (after - before) / before * 100


async def phase_cycles(args: argparse.Namespace, server: LoadServer, out: dict[str, Any]) -> None:
    n_sse = round(args.cycles * args.sse_share)
    header(
        f"cycles: {args.cycles} connect/initialize/close ({args.cycles - n_sse} streamable HTTP, {n_sse} legacy SSE)"
    )
    example, note = await sse_message_url(server.url)
    print(f"  legacy SSE message URL: {example}  ({note})")
    kinds = ["sse"] * n_sse + ["http"] * (args.cycles - n_sse)
    random.Random(2).shuffle(kinds)
    health0 = server.health()
    rss_start = server.rss()
    churn = Churn(rss_marks=[(0, rss_start)])
    await _churn(args, server, kinds, churn)
    rss_marks, seconds, failed = churn.rss_marks, churn.seconds, churn.failed
    rss_end = server.rss()
    await asyncio.sleep(args.settle_seconds)
    rss_settled = server.rss()
    health1 = server.health()
    # every SSE session this phase opened must now be unknown to the server
    still_open = await _not_released(churn.endpoints)
    warm_mark = rss_marks[1][1] if len(rss_marks) > 1 else rss_start
    growth = _growth(rss_start, rss_settled)
    growth_warm = _growth(warm_mark, rss_settled)
    load = loadavg()
    rate = churn.done / seconds if seconds else 0.0
    print(
        f"  {churn.done} cycles in {seconds:.0f} s ({rate:.0f}/s), failed {sum(failed.values())}  [load average {load}]"
    )
    for what, count in failed.most_common(5):
        print(f"    {count} x {what}")
    growth_text = "-" if growth is None else f"{growth:+.1f} %"
    print(
        f"  server RSS: start {mb(rss_start)}, end {mb(rss_end)}, "
        f"after {args.settle_seconds:.0f} s settle {mb(rss_settled)} -> growth {growth_text}"
    )
    if growth_warm is not None:
        warm_cycles = rss_marks[1][0] if len(rss_marks) > 1 else 0
        print(f"  growth since the first {warm_cycles} cycles (allocator warm): {growth_warm:+.1f} %")
    sessions = {k: health1.get(k) for k in ("active_sessions", "sessions") if k in health1}
    print(
        f"  SSE sessions opened {len(churn.endpoints)}; message URL answering anything but 404 after close: "
        f"{still_open}; "
        + (
            f"/health {sessions} after {args.settle_seconds:.0f} s (before the cycles "
            f"{ {k: health0.get(k) for k in sessions} }, highest seen during them "
            f"{max(churn.session_counts, default=None)})"
            if sessions
            else "/health does not report sessions (needs `active_sessions`)"
        )
    )
    out["cycles"] = {
        "loadavg": load,
        "cycles": churn.done,
        "sse": n_sse,
        "seconds": round(seconds, 1),
        "failed": sum(failed.values()),
        "errors": dict(failed.most_common(10)),
        "rss_start_bytes": rss_start,
        "rss_end_bytes": rss_end,
        "rss_settled_bytes": rss_settled,
        "rss_growth_pct": None if growth is None else round(growth, 2),
        "rss_growth_after_warm_pct": None if growth_warm is None else round(growth_warm, 2),
        "rss_marks": rss_marks,
        "sse_sessions_opened": len(churn.endpoints),
        "health_sessions_max_during": max(churn.session_counts, default=None),
        "sse_sessions_not_released": still_open,
        "sse_release_probe": note,
        "health_sessions": sessions or None,
    }
