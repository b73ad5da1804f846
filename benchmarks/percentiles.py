"""Percentiles of measured latencies, the same definition in every script.

Nearest rank on the sorted values: index round(q / 100 * (n - 1)).
"""

from __future__ import annotations


def percentile(values: list[float], q: float) -> float | None:
    """The `q`th percentile (0-100) of `values`; None when there are none."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]
