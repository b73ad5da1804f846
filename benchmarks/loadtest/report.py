"""How the load benchmark writes its figures: sizes, section headers with the load average (the machine
may be shared, so every figure is read beside it), and the closing table of each figure beside its target."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def mb(value: float | None) -> str:
    return "-" if value is None else f"{value / 1_048_576:.1f} MB"


def header(title: str) -> None:
    print(f"\n=== {title}   [load average {loadavg()}]", flush=True)


def summary(out: dict[str, Any]) -> None:
    """The figures against the targets, one markdown table row each."""
    print("\n| figure | target | measured | load avg |\n|---|---|---|---|")

    def row(figure: str, target: str, measured: Any, at: Any = "") -> None:
        print(f"| {figure} | {target} | {measured} | {at} |")

    if load := out.get("load"):
        n_http, n_sse = out["args"]["http_clients"], out["args"]["sse_clients"]
        mixed, kinds = load.get("mixed", {}), ("http", "sse")
        failed = [sum(n for op, n in mixed.get("failed_by_op", {}).items() if op.endswith(k)) for k in kinds]
        lost = [load["sessions_lost"].get(k, 0) for k in kinds]
        rss = (load["rss_idle_bytes"], load["rss_connected_bytes"], mixed.get("rss_peak_bytes"))
        per = load["rss_per_connection_bytes"]
        figure = f"failed requests, {n_http} HTTP + {n_sse} SSE mixed, {mixed.get('seconds')} s"
        row(figure, "0", mixed.get("failed"), mixed.get("loadavg"))
        row(
            "  of which HTTP / SSE; sessions lost (HTTP / SSE)",
            "0 / 0; 0 / 0",
            "{} / {}; {} / {}".format(*failed, *lost),
        )
        row("lost writes after the mixed load", "0", f"{load['lost']} of {load['acked']}")
        row(f"server RSS idle / {n_http + n_sse} connected / peak under load", "< 500 MB", " / ".join(map(mb, rss)))
        row("RSS per extra connection", "< 10 MB", "-" if per is None else f"{per / 1024:.0f} KB")
        for op, target in (("search", ">= 100/s"), ("store", "-")):
            at, s = load.get(op, {}).get("loadavg"), load.get(op, {}).get("ops", {}).get(op, {})
            measured = f"{s.get('rate')} (p50 {s.get('p50_ms')} ms, p95 {s.get('p95_ms')} ms)"
            row(f"{op} req/s at {n_http} HTTP clients ({op} only)", target, measured, at)
        per_min = sum(s["rate"] for s in mixed.get("ops", {}).values()) * 60
        row(f"requests/min, mixed {n_http + n_sse} clients", ">= 1000", f"{per_min:.0f}", mixed.get("loadavg"))
    if batch := out.get("batch"):
        during, idle, at = batch["during"], batch["baseline"], batch["loadavg"]
        for key in ("memory_stats", "search"):
            measured = f"{during[key]['p95_ms']} ms (idle {idle[key]['p95_ms']} ms)"
            row(f"{key} p95 during a {batch['batch']:,}-store batch", "< 100 ms", measured, at)
        row(
            "event-loop lag p95 / max during the batch", "< 50 ms", "{p95_ms} / {max_ms} ms".format(**during["lag"]), at
        )
    if cycles := out.get("cycles"):
        measured = f"{cycles['rss_growth_pct']} % ({cycles['failed']} failed)"
        row(f"RSS growth over {cycles['cycles']} connect/disconnect cycles", "< 5 %", measured, cycles["loadavg"])
        measured = f"{cycles['sse_sessions_not_released']} of {cycles['sse_sessions_opened']} still answer"
        row("SSE sessions left after disconnect", "0", f"{measured}; active_sessions {cycles['health_sessions_after']}")
    if term := out.get("sigterm"):
        row("SIGTERM during writes: exit code, lost", "0, 0", f"{term['exit_code']}, {term['lost']}")
    if kill := out.get("kill"):
        n, measured = len(kill["rounds"]), f"{kill['lost']} lost of {kill['acked']}; clean {kill['clean']}"
        row(f"kill -9 during writes ({n} rounds)", "0 lost, opens cleanly", f"{measured}/{n}", kill["loadavg"])
    final = out["final"]
    row("every acknowledged write, checked at the end", "0 lost", f"{final['lost']} lost of {final['acked']}")
