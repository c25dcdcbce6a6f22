"""Tables from bench/results/latest.json; rewrites the marked blocks in README.md and the docs.

    .venv/bin/python -m bench.render            # rewrite every marked block from latest.json
    .venv/bin/python -m bench.render --print    # print the main block instead

The main block (`bench:begin` … `bench:end`) is in README.md and docs/benchmarks.md; figures quoted
in prose elsewhere stand in blocks of their own (`bench:metrics-cost`), so no figure is copied by hand.

Each cell is `median ±half-range · baseline (ratio)`: the median over repeated runs, half the
distance between the fastest and slowest run, the same figure for the row's baseline measured in
the same run, and the figure divided by its baseline.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .targets import evaluate

REPO = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results" / "latest.json"
BEGIN = "<!-- bench:begin -->"
END = "<!-- bench:end -->"
TARGET_FILES = (REPO / "README.md", REPO / "docs" / "benchmarks.md")
METRICS_BEGIN = "<!-- bench:metrics-cost -->"
METRICS_END = "<!-- bench:metrics-cost:end -->"
METRICS_FILES = (REPO / "docs" / "observability.md",)
HOOKS_RESULTS = Path(__file__).resolve().parent / "results" / "hooks.json"
HOOKS_BEGIN = "<!-- bench:hooks -->"
HOOKS_END = "<!-- bench:hooks:end -->"
HOOKS_FILES = (REPO / "docs" / "claude-code.md", REPO / "docs" / "codex.md")

Getter = Callable[[dict[str, Any]], Any]


def _num(value: float) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    magnitude = abs(value)
    if magnitude >= 100:
        return f"{value:.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def _get(node: Any, path: Sequence[str]) -> Any:
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node


def _cell(fig: Any, base: Any, scale: float = 1.0) -> str:
    if not isinstance(fig, dict) or "median" not in fig or fig["median"] is None:
        return "–"
    value = fig["median"] * scale
    if isinstance(value, float) and math.isnan(value):
        return "–"
    text = f"{_num(value)} ±{_num((fig['max'] - fig['min']) * scale / 2)}"
    if isinstance(base, dict) and base.get("median"):
        b = base["median"] * scale
        text += f" · {_num(b)} ({value / b:.1f}×)"
    return text


def _size_label(n: str) -> str:
    value = int(n)
    return f"{value // 1000}k" if value >= 1000 and value % 1000 == 0 else str(value)


def at(*path: str) -> Getter:
    """A getter of the figure at `path` in one size's results; no path: no figure."""
    return lambda size: _get(size, path) if path else None


def _rows(results: dict[str, Any]) -> list[tuple[str, str, Getter, Getter]]:
    """(figure, baseline name, figure getter, baseline getter) per row; getters take one size."""
    modes: dict[str, str] = results["plan"]["modes"]
    rows: list[tuple[str, str, Getter, Getter]] = []
    for key, label in modes.items():
        for p in ("p50", "p95", "p99"):
            rows.append(
                (
                    f"prepare in process, {label}: {p} ms",
                    "raw Store reads",
                    at("in_process", key, "prepare", p),
                    at("in_process", key, "raw_reads", p),
                )
            )
    for key, label in modes.items():
        for p in ("p50", "p95", "p99"):
            rows.append(
                (
                    f"prepare over HTTP, {label}: {p} ms",
                    "raw Store reads",
                    at("http", "latency", key, p),
                    at("in_process", key, "raw_reads", p),
                )
            )
    rows.append(
        (
            "HTTP floor, GET /health/live: p50 ms",
            "–",
            at("http", "latency", "health", "p50"),
            at(),
        )
    )
    for key, label in modes.items():
        rows.append(
            (
                f"server CPU per request, one client, {label}: ms",
                "GET /health/live",
                at("http", "cpu_ms_per_request", key),
                at("http", "cpu_ms_per_request", "health"),
            )
        )
    conns = results["plan"].get("connections", 8)
    for key, label in modes.items():
        rows.append(
            (
                f"throughput, {conns} clients, {label}: req/s",
                "GET /health/live",
                at("http", "throughput", "requests_per_s", key),
                at("http", "throughput", "requests_per_s", "health"),
            )
        )
        rows.append(
            (
                f"server CPU per request, {conns} clients, {label}: ms",
                "GET /health/live",
                at("http", "throughput", "cpu_ms_per_request", key),
                at("http", "throughput", "cpu_ms_per_request", "health"),
            )
        )
    rows += [
        (
            "ingest over HTTP, one client: remembers/s",
            "in-process remember",
            at("http", "ingest", "remember_per_s"),
            at("in_process", "remember_per_s"),
        ),
        (
            "server CPU per remember: ms",
            "–",
            at("http", "ingest", "cpu_ms_per_request"),
            at(),
        ),
    ]
    return rows


def _memory_row(sizes: dict[str, Any]) -> str:
    cells = []
    for size in sizes.values():
        mem = _get(size, ["http", "memory_kib"]) or {}
        if not mem:
            cells.append("–")
            continue
        peak, idle = mem["peak"] / 1024, mem["idle_peak"] / 1024
        cells.append(f"{peak:.0f} · {idle:.0f} ({peak / idle:.1f}×)")
    return "| server peak memory (VmHWM): MiB | server after start-up | " + " | ".join(cells) + " |"


def database_table(sizes: dict[str, Any], results: dict[str, Any]) -> str:
    header = "| figure | baseline | " + " | ".join(f"{_size_label(n)} / Scope" for n in sizes) + " |"
    lines = [header, "|" + " --- |" * (2 + len(sizes))]
    for name, base_name, get, get_base in _rows(results):
        cells = [_cell(get(size), get_base(size)) for size in sizes.values()]
        lines.append(f"| {name} | {base_name} | " + " | ".join(cells) + " |")
    lines.append(_memory_row(sizes))
    seeds = []
    for size in sizes.values():
        seed = size.get("seed", {})
        if seed.get("cached"):
            seeds.append("cached" + (f", {seed['file_mib']} MiB" if "file_mib" in seed else ""))
        elif "copied_rows" in seed:
            rows_per_s = seed["copied_rows"] / seed["seconds"]
            seeds.append(
                f"copied from SQLite: {seed['copied_rows']} rows, {_num(seed['seconds'])} s ({_num(rows_per_s)} rows/s)"
            )
        else:
            seeds.append(
                f"{_num(seed.get('remember_per_s', math.nan))}/s, {_num(seed.get('seconds', math.nan))} s"
            )
    lines.append(
        "| corpus: seeded in process (batched commits), or copied (`copy-store`) | – | "
        + " | ".join(seeds)
        + " |"
    )
    return "\n".join(lines)


def fitting_table(results: dict[str, Any]) -> str:
    fit = results.get("fitting_ms", {})
    plain = "one plain render of the 26 bodies"
    return _baseline_table(
        "fitting 26 candidates × 2000 B at max_bytes 32768",
        "ms",
        fit.get("render"),
        [
            ("text builder (four-family sections 8/2/8/8)", plain, fit.get("text")),
            ("legacy envelope (16 Memory, 8 Topic, 2 Experience)", plain, fit.get("legacy")),
        ],
    )


def metrics_table(results: dict[str, Any]) -> str:
    cost = results.get("metrics_us", {})
    return _baseline_table(
        "`/metrics` bookkeeping per request, CPU",
        "µs",
        cost.get("other"),
        [
            (
                "a prepare: request counter and latency, content bytes, 26 candidates by family and reason",
                "any other request",
                cost.get("prepare"),
            )
        ],
    )


def _baseline_table(title: str, unit: str, baseline: Any, rows: list[tuple[str, str, Any]]) -> str:
    """A table of figures, each against the same baseline (its label per row)."""
    lines = [f"| {title} | baseline | median {unit} |", "| --- | --- | --- |"]
    lines += [f"| {label} | {base} | {_cell(value, baseline)} |" for label, base, value in rows]
    return "\n".join(lines)


def targets_table(results: dict[str, Any]) -> str:
    lines = ["| target | measured | verdict |", "| --- | --- | --- |"]
    notes = []
    # Judged again from the figures, so a reworded reason needs no new run.
    for t in evaluate(results) if "databases" in results else results.get("targets", []):
        if t["met"] is None:
            verdict, measured = "not measured", "–"
        else:
            measured = f"{_num(t['value'])} {t['unit']}"
            verdict = "met" if t["met"] else f"**missed**: {t['by']}"
        lines.append(f"| {t['target']} | {measured} | {verdict} |")
        if t["met"] is False and t.get("why"):
            notes.append(f"- *{t['target']}*: {t['why']}")
    return "\n".join(lines + (["", *notes] if notes else []))


def block(results: dict[str, Any]) -> str:
    m = results["machine"]
    plan = results["plan"]
    load = m.get("load_average_at_start", [])
    parts = [
        f"Generated by `make bench` on {results['generated_at']} (commit `{m.get('commit', '?')}`, "
        f"{results.get('seconds', '?')} s) from `bench/results/latest.json` by `bench/render.py`; "
        "do not edit by hand.",
        "",
        f"**Machine:** {m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB, {m['os']}, "
        f"Python {m['python']}, SQLite {m['sqlite']}, {m['load_generator']}; server and load "
        f"generator share the machine over loopback. Load average at start: "
        f"{', '.join(str(x) for x in load)}.",
        "",
        "**Method:** a corpus per size (N Memory entries in each of 4 Scopes: one project Scope "
        f"referencing 3 others; English and Chinese text; Experience, Profile and Topic Memory; "
        f"{plan['queries']} queries), seeded into SQLite through the Runtime in process, copied into "
        "OceanBase with `powercontext copy-store`'s code, and reused while the store code is "
        f"unchanged. Every figure is the median of {plan['repeats']} runs (throughput: "
        f"{plan['throughput_repeats']}), shown as `median ±half-range · baseline (ratio)`, the "
        "baseline measured in the same runs, interleaved. In-process latency calls the Runtime from "
        "a request dict; its baseline is the raw Store reads the same request needs (Scope lookup "
        "and each family's search), the floor prepare cannot beat. HTTP latency: one keep-alive "
        f"client, sequential, up to {plan['latency_requests']} requests or {plan['latency_cap_s']} s "
        "per run, against `powercontext serve` as its own process (default settings, access "
        "disabled, assembly limit raised to 26). Server CPU is utime+stime from /proc over each "
        f"run divided by its requests. Throughput: wrk, {plan['connections']} connections, "
        f"{plan['throughput_seconds']} s per run, against a second server started with one worker "
        "process per core (`POWERCONTEXT_SERVER_WORKERS`), its CPU summed over the workers and "
        "each worker's search mirror warmed first. Ingest: wrk, one connection, "
        f"{plan['ingest_seconds']} s per run, into a fresh Scope. Peak memory: VmHWM at the end. On "
        "OceanBase the server's CPU and memory exclude the database process's own.",
        "",
    ]
    for name, sizes in results.get("databases", {}).items():
        counts = [
            f"{_size_label(n)}: {min(_get(size, ['http', 'latency', 'assembly', 'requests_per_run']) or [0])}"
            for n, size in sizes.items()
            if "error" not in size
        ]
        if counts:
            parts += [
                f"Fewest requests in one HTTP latency run ({name}, `assembly: {{}}`): {', '.join(counts)}; "
                "where a run holds only a few, its p95 and p99 are close to its maximum.",
                "",
            ]
    for name, reason in results.get("skipped", {}).items():
        parts += [f"**{name}:** {reason}.", ""]
    for name, sizes in results.get("databases", {}).items():
        title = {"sqlite": "SQLite", "oceanbase": "OceanBase"}.get(name, name)
        failed = {n: s["error"] for n, s in sizes.items() if "error" in s}
        sizes = {n: s for n, s in sizes.items() if "error" not in s}
        parts += [f"### {title}", "", database_table(sizes, results), ""]
        parts += [f"**{_size_label(n)} per Scope failed:** {e}" for n, e in failed.items()]
    parts += ["### Fitting (no database)", "", fitting_table(results), ""]
    if "metrics_us" in results:
        parts += ["### Metrics (no database)", "", metrics_table(results), ""]
    parts += ["### Targets (SQLite, 10k entries per Scope, 3 referenced Scopes, `assembly: {}`)", ""]
    parts += [targets_table(results)]
    return "\n".join(parts).rstrip() + "\n"


def metrics_cost(results: dict[str, Any]) -> str:
    """The sentence docs/observability.md quotes: what the metrics bookkeeping costs per request."""
    cost = results["metrics_us"]
    return (
        f"The bookkeeping costs about {_num(cost['prepare']['median'])} µs of CPU for a prepare with 26 "
        f"candidates and {_num(cost['other']['median'])} µs for any other request (`make bench`, "
        f'"Metrics", run of {results["generated_at"]}).\n'
    )


def hooks_table(hooks: dict[str, Any]) -> str:
    """The hook cost table of docs/claude-code.md, from bench/results/hooks.json (`make bench-hooks`)."""
    f = hooks["figures"]
    rows = [
        ("prompt hook: start, one prepare, answer, exit", "prompt", "≤ 150"),
        ("stop hook: start, read the transcript, hand off, exit", "stop", "≤ 50"),
        ("baseline: the interpreter starting and exiting", "interpreter", ""),
        ("baseline: the prepare alone on a warm connection", "prepare_http", ""),
    ]
    lines = [
        f"Measured by `make bench-hooks` on {hooks['generated_at']} ({hooks['cpu']}), "
        f"{hooks['runs']} runs against a warm server holding {hooks['entries']:,} Memory entries:",
        "",
        "| what | p50 ms | p95 ms | target p50 ms |",
        "| --- | --- | --- | --- |",
    ]
    lines += [
        f"| {label} | {f[key]['p50_ms']} | {f[key]['p95_ms']} | {target} |" for label, key, target in rows
    ]
    return "\n".join(lines) + "\n"


def console_table(results: dict[str, Any]) -> str:
    return block(results)


def rendered(path: Path, text: str, begin: str = BEGIN, end: str = END) -> str | None:
    """`path`'s content with `text` between the markers; None when the file has no marked block."""
    content = path.read_text()
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.DOTALL)
    if not pattern.search(content):
        return None
    return pattern.sub(lambda _m: f"{begin}\n{text}{end}", content, count=1)


def rewrites(results: dict[str, Any]) -> dict[Path, str]:
    """Every file with a marked block, as rendering `results` leaves it."""
    out: dict[Path, str] = {}
    jobs = [(p, block(results), BEGIN, END) for p in TARGET_FILES]
    if "metrics_us" in results:
        jobs += [(p, metrics_cost(results), METRICS_BEGIN, METRICS_END) for p in METRICS_FILES]
    if HOOKS_RESULTS.exists():
        hooks = hooks_table(json.loads(HOOKS_RESULTS.read_text()))
        jobs += [(p, hooks, HOOKS_BEGIN, HOOKS_END) for p in HOOKS_FILES]
    for path, text, begin, end in jobs:
        if path.exists() and (content := rendered(path, text, begin, end)) is not None:
            out[path] = content
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.render")
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--print", action="store_true", help="print the block, change no file")
    args = parser.parse_args(argv)
    results = json.loads(args.results.read_text())
    text = block(results)
    if args.print:
        print(text)
        return 0
    for path, content in rewrites(results).items():
        path.write_text(content)
        print(f"rewrote the benchmark blocks in {path.relative_to(REPO)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
