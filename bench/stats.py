"""Percentiles of one run, and the median-with-spread of repeated runs that every figure reports."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any


def percentile(samples: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of unsorted samples. A q below 1 is refused: it was
    a share meant as a percent (0.5 for the median gave the scale tier's fastest sample)."""
    if not 1 <= q <= 100:
        raise ValueError(f"percentile takes a percent from 1 to 100, not {q}")
    ordered = sorted(samples)
    if not ordered:
        return math.nan
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def latency_run(samples_s: Sequence[float]) -> dict[str, float]:
    """p50/p95/p99 in milliseconds of one run's per-request seconds."""
    ms = [s * 1000 for s in samples_s]
    return {"p50": percentile(ms, 50), "p95": percentile(ms, 95), "p99": percentile(ms, 99), "n": len(ms)}


def figure(values: Sequence[float]) -> dict[str, Any]:
    """A figure over repeated runs: the median, with min, max and the runs themselves."""
    clean = [v for v in values if not math.isnan(v)]
    if not clean:
        return {"median": math.nan, "min": math.nan, "max": math.nan, "runs": []}
    return {
        "median": statistics.median(clean),
        "min": min(clean),
        "max": max(clean),
        "runs": [round(v, 4) for v in clean],
    }


def latency_figures(runs: Sequence[dict[str, float]]) -> dict[str, Any]:
    """Per percentile, the median over runs of that run's percentile."""
    return {key: figure([r[key] for r in runs]) for key in ("p50", "p95", "p99")} | {
        "requests_per_run": [int(r["n"]) for r in runs]
    }
