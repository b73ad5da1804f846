"""The cycles phase: many connect/initialize/close cycles, a share over legacy SSE. Clients come and go
all day, so the server must not grow with them and must release every closed SSE session."""

from __future__ import annotations

import argparse
import asyncio
import random
import time
from collections import Counter
from typing import Any

import httpx

from loadtest.clients import CALL_TIMEOUT, Session, error_text
from loadtest.report import header, loadavg, mb
from loadtest.server import LoadServer

SSE_SHARE = 0.2  # of the cycles
IN_FLIGHT = 8  # cycles at a time
SETTLE_SECONDS = 35.0  # before the last RSS and session reading
JSON = {"content-type": "application/json"}


async def _release_check(url: str) -> str:
    """One legacy-SSE session's message URL must answer while open (not 404) and 404 once closed, or a 404
    would not prove a session released. Says what it answered and when."""
    async with httpx.AsyncClient(timeout=30) as http:
        async with Session(url, "sse") as session:
            target = str(session.endpoint)
            open_status = (await http.post(target, content=b"{not json", headers=JSON)).status_code
        started = time.monotonic()
        while time.monotonic() - started < 40:
            if (await http.post(target, content=b"{}", headers=JSON)).status_code == 404:
                return f"open session answered {open_status}; closed, 404 after {time.monotonic() - started:.2f} s"
            await asyncio.sleep(0.25)
    return f"open session answered {open_status}; closed, still no 404 after 40 s"


async def _still_held(endpoints: list[str]) -> int:
    """How many of these SSE message URLs answer anything but 404: sessions the server still holds."""
    async with httpx.AsyncClient(timeout=30) as http:
        return sum([(await http.post(e, content=b"{}", headers=JSON)).status_code != 404 for e in endpoints])


async def phase_cycles(args: argparse.Namespace, server: LoadServer, out: dict[str, Any]) -> None:
    n_sse = round(args.cycles * SSE_SHARE)
    header(f"cycles: {args.cycles} connect/initialize/close ({n_sse} of them legacy SSE)")
    note = await _release_check(server.url)
    print(f"  legacy SSE release check: {note}")
    kinds = ["sse"] * n_sse + ["http"] * (args.cycles - n_sse)
    random.Random(2).shuffle(kinds)
    failed: Counter[str] = Counter()
    endpoints: list[str] = []
    marks = [(0, server.rss())]  # (cycles done, RSS) every tenth: the first tenth warms the allocator
    started, done = time.monotonic(), 0

    async def worker() -> None:
        nonlocal done
        while kinds:
            kind = kinds.pop()
            session = Session(server.url, kind)
            try:
                async with asyncio.timeout(CALL_TIMEOUT), session:
                    pass
            except Exception as exc:  # noqa: BLE001 - a failed cycle, whatever the cause
                failed[f"{kind}: {error_text(exc)[:120]}"] += 1
            endpoints.extend(filter(None, [session.endpoint]))
            done += 1
            if done % max(1, args.cycles // 10) == 0:
                marks.append((done, server.rss()))
                sessions = server.health().get("active_sessions")
                print(f"  {done:>6} cycles: RSS {mb(marks[-1][1])}, /health active_sessions {sessions}", flush=True)

    await asyncio.gather(*(worker() for _ in range(IN_FLIGHT)))
    seconds, rss_end = time.monotonic() - started, server.rss()
    await asyncio.sleep(SETTLE_SECONDS)
    rss, sessions, still_held = server.rss(), server.health().get("active_sessions"), await _still_held(endpoints)
    growth = [None if not (before and rss) else round((rss - before) / before * 100, 2) for _, before in marks[:2]]
    print(f"  {args.cycles} cycles in {seconds:.0f} s, {sum(failed.values())} failed  [load {loadavg()}]")
    for what, count in failed.most_common(5):
        print(f"    {count} x {what}")
    print(
        f"  server RSS start {mb(marks[0][1])}, end {mb(rss_end)}, {SETTLE_SECONDS:.0f} s later {mb(rss)}: "
        f"growth {growth[0]} %, {growth[-1]} % after the first tenth"
    )
    print(f"  SSE sessions opened {len(endpoints)}, answering after close {still_held}; active_sessions {sessions}")
    out["cycles"] = {"loadavg": loadavg(), "cycles": args.cycles, "seconds": round(seconds, 1)}
    out["cycles"] |= {"failed": sum(failed.values()), "errors": dict(failed.most_common(10)), "rss_marks": marks}
    out["cycles"] |= {"rss_end_bytes": rss_end, "rss_settled_bytes": rss, "rss_growth_pct": growth[0]}
    out["cycles"] |= {"rss_growth_after_warm_pct": growth[-1], "sse_release_check": note}
    out["cycles"] |= {"sse_sessions_opened": len(endpoints), "sse_sessions_not_released": still_held}
    out["cycles"]["health_sessions_after"] = sessions
