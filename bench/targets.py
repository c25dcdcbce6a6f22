"""The issue's targets, judged from a results file, each with how far off it is and why.

Reference point: SQLite, 10k entries per Scope, 3 referenced Scopes, `assembly: {}` (mode
`assembly`). The "why" of a missed target is computed from the baselines measured in the same run,
so it says where the time goes rather than guessing.
"""

from __future__ import annotations

import math
from typing import Any

REFERENCE_DB = "sqlite"
REFERENCE_N = "10000"
MODE = "assembly"


def _median(node: Any, *path: str) -> float:
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return math.nan
        node = node[key]
    return float(node["median"]) if isinstance(node, dict) and "median" in node else math.nan


def _judge(
    key: str, text: str, value: float, limit: float, unit: str, at_most: bool, why: str
) -> dict[str, Any]:
    if math.isnan(value):
        return {"key": key, "target": text, "value": None, "unit": unit, "met": None, "by": "not measured"}
    met = value <= limit if at_most else value >= limit
    if met:
        by = ""
    elif at_most:
        by = f"{value / limit:.1f}× the limit ({value - limit:+.2f} {unit})"
    else:
        by = f"{value / limit:.0%} of the target ({value - limit:+.0f} {unit})"
    return {
        "key": key,
        "target": text,
        "value": round(value, 3),
        "unit": unit,
        "met": met,
        "by": by,
        "why": "" if met else why,
    }


def evaluate(results: dict[str, Any]) -> list[dict[str, Any]]:
    sizes = results.get("databases", {}).get(REFERENCE_DB, {})
    f = _figures(results, sizes.get(REFERENCE_N, {}))
    return [*_latency_targets(f), *_cost_targets(f), _growth_target(sizes)]


def _figures(results: dict[str, Any], ref: dict[str, Any]) -> dict[str, float]:
    """The medians the targets judge, at the reference database and size."""
    inproc = ref.get("in_process", {})
    http = ref.get("http", {})
    return {
        "raw_p50": _median(inproc, MODE, "raw_reads", "p50"),
        "raw_p99": _median(inproc, MODE, "raw_reads", "p99"),
        "prep_p50": _median(inproc, MODE, "prepare", "p50"),
        "http_p50": _median(http, "latency", MODE, "p50"),
        "http_p99": _median(http, "latency", MODE, "p99"),
        "floor_p50": _median(http, "latency", "health", "p50"),
        "cpu": _median(http, "cpu_ms_per_request", MODE),
        "health_cpu": _median(http, "cpu_ms_per_request", "health"),
        "load_cpu": _median(http, "throughput", "cpu_ms_per_request", MODE),
        "rps": _median(http, "throughput", "requests_per_s", MODE),
        "ingest": _median(http, "ingest", "remember_per_s"),
        "ingest_floor": _median(inproc, "remember_per_s"),
        "fit": max(_median(results, "fitting_ms", "text"), _median(results, "fitting_ms", "legacy")),
        "metrics_us": _median(results, "metrics_us", "prepare"),
    }


def _latency_targets(f: dict[str, float]) -> list[dict[str, Any]]:
    raw_p50, prep_p50, http_p50 = f["raw_p50"], f["prep_p50"], f["http_p50"]
    latency_why = (
        f"The raw Store reads that prepare needs take {raw_p50:.1f} ms p50 / {f['raw_p99']:.1f} ms p99 "
        f"in process on their own; prepare itself adds {prep_p50 - raw_p50:+.2f} ms and HTTP "
        f"{http_p50 - prep_p50:+.2f} ms at p50 (the HTTP floor, GET /health/live, is "
        f"{f['floor_p50']:.2f} ms)."
    )
    return [
        _judge("http_p50", "prepare over HTTP p50 ≤ 5 ms", http_p50, 5, "ms", True, latency_why),
        _judge("http_p99", "prepare over HTTP p99 ≤ 20 ms", f["http_p99"], 20, "ms", True, latency_why),
        _judge(
            "in_process_ratio",
            "in-process prepare p50 within 2× of its raw Store reads",
            prep_p50 / raw_p50 if raw_p50 else math.nan,
            2,
            "×",
            True,
            "Prepare's own work (validation, recall merging, fitting, rendering) costs more than the reads.",
        ),
    ]


def _cost_targets(f: dict[str, float]) -> list[dict[str, Any]]:
    raw_p50, prep_p50, cpu, load_cpu = f["raw_p50"], f["prep_p50"], f["cpu"], f["load_cpu"]
    return [
        _judge(
            "cpu",
            "server CPU per prepare ≤ 2 ms",
            cpu,
            2,
            "ms",
            True,
            f"Of {cpu:.2f} ms: the raw Store reads take {raw_p50:.2f} ms in process (ranking four "
            f"Scopes' Memory and Experience, SQLite running in the server's threads), prepare's own "
            f"work {prep_p50 - raw_p50:.2f} ms, and the HTTP stack the remaining "
            f"{cpu - prep_p50:.2f} ms (uvicorn, routing, parsing into the generated model, JSON out, and the "
            f"hop to a worker thread; `GET /health/live` alone costs {f['health_cpu']:.2f} ms).",
        ),
        _judge(
            "throughput",
            "≥ 400 prepares/s with 8 concurrent clients",
            f["rps"],
            400,
            "req/s",
            False,
            f"Under load the server spends {load_cpu:.1f} ms of CPU per prepare, and 2 cores shared "
            f"with the load generator cap it near {2000 / load_cpu:.0f}/s."
            if load_cpu and not math.isnan(load_cpu)
            else "No CPU figure under load.",
        ),
        _judge(
            "fitting",
            "fitting 26 candidates of 2000-byte bodies at max_bytes 32768 < 1 ms",
            f["fit"],
            1,
            "ms",
            True,
            "Fitting walks bodies piece by piece.",
        ),
        _judge(
            "metrics",
            "metrics bookkeeping ≤ 0.1 ms of CPU per request (a prepare of 26 candidates)",
            f["metrics_us"] / 1000,
            0.1,
            "ms",
            True,
            "Each label set is looked up per request; prometheus-client's locks and mmap writes add up.",
        ),
        _judge(
            "ingest",
            "≥ 500 remembers/s over HTTP from one client",
            f["ingest"],
            500,
            "req/s",
            False,
            f"The Store write alone manages {f['ingest_floor']:.0f} remembers/s in process (one transaction "
            "each, maintaining the search index's postings); HTTP adds the rest.",
        ),
    ]


def _growth_target(sizes: dict[str, Any]) -> dict[str, Any]:
    small = _median(sizes.get("1000", {}), "http", "latency", MODE, "p50")
    large = _median(sizes.get("100000", {}), "http", "latency", MODE, "p50")
    raw_small = _median(sizes.get("1000", {}), "in_process", MODE, "raw_reads", "p50")
    raw_large = _median(sizes.get("100000", {}), "in_process", MODE, "raw_reads", "p50")
    return _judge(
        "growth",
        "p50 over HTTP at 100k entries per Scope within 3× of p50 at 1k",
        large / small if small else math.nan,
        3,
        "×",
        True,
        f"The raw Store reads grow from {raw_small:.1f} ms to {raw_large:.1f} ms p50 "
        f"({raw_large / raw_small:.0f}×): search cost grows with the postings of the query's terms.",
    )
