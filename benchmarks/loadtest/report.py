"""The closing table of the load benchmark: each figure beside its target, as markdown table rows."""

from __future__ import annotations

from collections import Counter
from typing import Any

from loadtest.figures import mb

Row = tuple[str, str, str, str]  # figure, target, measured, load average


def _load_rows(load: dict[str, Any], n_http: int, n_sse: int) -> list[Row]:
    rows: list[Row] = []
    mixed = load.get("mixed") or {}
    rows.append(
        (
            f"failed requests, {n_http} HTTP + {n_sse} SSE mixed, {mixed.get('seconds')} s",
            "0",
            str(mixed.get("failed")),
            str(mixed.get("loadavg")),
        )
    )
    by_kind = Counter(
        {
            kind: sum(n for op, n in (mixed.get("failed_by_op") or {}).items() if op.endswith("/" + kind))
            for kind in ("http", "sse")
        }
    )
    broken = load.get("sessions_broken_by_kind") or {}
    rows.append(
        (
            "  of which HTTP / SSE; client sessions lost (HTTP / SSE)",
            "0 / 0; 0 / 0",
            f"{by_kind['http']} / {by_kind['sse']}; {broken.get('http', 0)} / {broken.get('sse', 0)}",
            "",
        )
    )
    rows.append(("lost writes after the mixed load", "0", f"{load.get('lost')} of {load.get('acked')}", ""))
    rows.append(
        (
            f"server RSS idle / {n_http + n_sse} connected / peak under load",
            "< 500 MB",
            " / ".join(
                mb(v)
                for v in (load.get("rss_idle_bytes"), load.get("rss_connected_bytes"), mixed.get("rss_peak_bytes"))
            ),
            "",
        )
    )
    per = load.get("rss_per_connection_bytes")
    rows.append(("RSS per extra connection", "< 10 MB", "-" if per is None else f"{per / 1024:.0f} KB", ""))
    for phase, op in (("search", "search"), ("store", "store")):
        entry = load.get(phase) or {}
        rate = (entry.get("rates") or {}).get(op)
        lat = (entry.get("latency") or {}).get(op) or {}
        target = ">= 100/s" if op == "search" else "-"
        rows.append(
            (
                f"{op} req/s at {n_http} HTTP clients ({op} only)",
                target,
                f"{rate} (p50 {lat.get('p50_ms')} ms, p95 {lat.get('p95_ms')} ms)",
                str(entry.get("loadavg")),
            )
        )
    rates = mixed.get("rates") or {}
    total = sum(rates.values())
    rows.append(
        (f"requests/min, mixed {n_http + n_sse} clients", ">= 1000", f"{total * 60:.0f}", str(mixed.get("loadavg")))
    )
    return rows


def _batch_rows(batch: dict[str, Any]) -> list[Row]:
    during, baseline, load = batch["during"], batch["baseline"], batch["loadavg"]
    return [
        (
            f"memory_stats p95 during a {batch['batch']:,}-store batch",
            "< 100 ms (seed 500)",
            f"{during['memory_stats']['p95_ms']} ms (idle {baseline['memory_stats']['p95_ms']} ms)",
            load,
        ),
        (
            "search_memory p95 during the batch",
            "< 100 ms (seed 500)",
            f"{during['search']['p95_ms']} ms (idle {baseline['search']['p95_ms']} ms)",
            load,
        ),
        (
            "event-loop lag p95 / max during the batch",
            "< 50 ms",
            f"{during['lag']['p95_ms']} / {during['lag']['max_ms']} ms",
            load,
        ),
    ]


def _cycles_rows(cycles: dict[str, Any]) -> list[Row]:
    return [
        (
            f"RSS growth over {cycles['cycles']} connect/disconnect cycles",
            "< 5 %",
            f"{cycles['rss_growth_pct']} % ({cycles['failed']} failed)",
            cycles["loadavg"],
        ),
        (
            "SSE sessions left after disconnect",
            "0",
            f"{cycles['sse_sessions_not_released']} of {cycles['sse_sessions_opened']} answer on their message URL"
            + (
                f"; /health active_sessions {cycles['health_sessions'].get('active_sessions')}"
                f" (highest during the cycles {cycles.get('health_sessions_max_during')})"
                if cycles.get("health_sessions")
                else " (/health has no count)"
            ),
            "",
        ),
    ]


def _end_rows(out: dict[str, Any]) -> list[Row]:
    rows: list[Row] = []
    term = out.get("sigterm")
    if term:
        rows.append(("SIGTERM during writes: exit code, lost", "0, 0", f"{term.get('exit_code')}, {term['lost']}", ""))
    kill = out.get("kill")
    if kill:
        rows.append(
            (
                f"kill -9 during writes ({len(kill['rounds'])} rounds)",
                "0 lost, opens cleanly",
                f"{kill['lost']} lost of {kill['acked']}; clean {kill['clean']}/{len(kill['rounds'])}",
                kill["loadavg"],
            )
        )
    final = out.get("final")
    if final:
        rows.append(
            ("every acknowledged write, checked at the end", "0 lost", f"{final['lost']} lost of {final['acked']}", "")
        )
    return rows


def summary(out: dict[str, Any]) -> None:
    """The figures against the targets of issue 6, one line each (markdown table rows)."""
    rows: list[Row] = []
    load = out.get("load") or {}
    if load:
        rows += _load_rows(load, out["args"]["http_clients"], out["args"]["sse_clients"])
    if out.get("batch"):
        rows += _batch_rows(out["batch"])
    if out.get("cycles"):
        rows += _cycles_rows(out["cycles"])
    rows += _end_rows(out)
    print("\n| figure | target | measured | load avg |\n|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
