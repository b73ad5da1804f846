"""How the load benchmark writes its figures: durations, sizes, latency summaries, the load average."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from percentiles import percentile


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def ms(value: float | None) -> str:
    return "-" if value is None else f"{value * 1000:.0f} ms"


def mb(value: float | None) -> str:
    return "-" if value is None else f"{value / 1_048_576:.1f} MB"


def lat_summary(values: list[float]) -> dict[str, Any]:
    return {
        "n": len(values),
        "p50_ms": None if not values else round(percentile(values, 50) * 1000, 1),  # type: ignore[operator]
        "p95_ms": None if not values else round(percentile(values, 95) * 1000, 1),  # type: ignore[operator]
        "max_ms": None if not values else round(max(values) * 1000, 1),
    }


def lat_text(values: list[float]) -> str:
    if not values:
        return "n=0"
    return f"n={len(values)} p50 {ms(percentile(values, 50))} p95 {ms(percentile(values, 95))} max {ms(max(values))}"


def header(title: str) -> None:
    print(f"\n=== {title}   [load average {loadavg()}]", flush=True)
