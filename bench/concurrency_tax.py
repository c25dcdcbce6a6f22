"""`python -m bench.concurrency_tax`: what concurrency costs one server process, and prepare next to
search (issue 34, items 0 and 4).

One 10k-entry SQLite corpus (bench/run.py's, cached), one `powercontext serve` process with one
worker. For raw `/v1/memory/search`, `assembly: {}` prepare and legacy prepare it reports server CPU
ms per request (user + system of every server thread, from /proc), context switches per request
(of the server's live threads, from /proc) and p50 latency from one keep-alive connection, then CPU
ms and context switches per request and requests/s from 8 wrk connections.

    .venv/bin/python -m bench.concurrency_tax
    .venv/bin/python -m bench.concurrency_tax --baseline /tmp/old   # a checkout of an older commit

With `--baseline`, a second server runs the baseline's code (on PYTHONPATH) on the same database
file, and each round measures each kind on the two servers back to back, in alternating order, so
the figures compare like with like on a machine that other work shares. Each figure is the median
over rounds with its min and max.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from devtools.server_process import REPO, Client, ServerProcess

from . import inprocess, loadgen
from .datagen import MAIN_SCOPE, queries
from .run import Database, prepare_database, server_env
from .stats import figure, percentile

PYTHONPATH_DIRS = ("generated", "runtime", "server", "client", "hosts/core", "")


@dataclass(frozen=True)
class Kind:
    key: str
    path: str
    extra: dict[str, Any]

    def wire(self, query: str) -> bytes:
        body = {"scope_id": MAIN_SCOPE, "query": query, **self.extra}
        return json.dumps(body, ensure_ascii=False).encode("utf-8")


KINDS = (
    Kind("search", "/v1/memory/search", {"limit": 16}),
    Kind("assembly", "/v1/context/prepare", {"assembly": {}}),
    Kind("legacy", "/v1/context/prepare", {}),
)


@dataclass(frozen=True)
class Plan:
    rounds: int
    requests: int
    seconds: int
    connections: int


def pythonpath(tree: Path) -> str:
    return ":".join(str(tree / d) if d else str(tree) for d in PYTHONPATH_DIRS)


def context_switches(server: ServerProcess) -> dict[str, int]:
    """Context switches so far of each live thread of the server, by thread id."""
    out: dict[str, int] = {}
    for pid in server.processes():
        for status in Path(f"/proc/{pid}/task").glob("*/status"):
            try:
                lines = status.read_text().splitlines()
            except (FileNotFoundError, ProcessLookupError):  # the thread just ended
                continue
            out[status.parent.name] = sum(int(ln.split()[1]) for ln in lines if "ctxt_switches:" in ln)
    return out


def switches_since(server: ServerProcess, before: dict[str, int]) -> int:
    """Context switches since `before` of the threads alive now (a thread that ended meanwhile
    takes its count with it: anyio retires a worker thread after 10 s idle)."""
    return sum(count - before.get(tid, 0) for tid, count in context_switches(server).items())


def _sequential(server: ServerProcess, call: Callable[[int], None], count: int) -> dict[str, float]:
    """p50 ms, server CPU ms and context switches per request of `count` requests from one connection."""
    before, switches = server.cpu_seconds(), context_switches(server)
    samples = inprocess.timed_batch(call, count, cap_s=30.0)
    return {
        "p50_ms": percentile([s * 1000 for s in samples], 50),
        "cpu_ms_sequential": (server.cpu_seconds() - before) * 1000 / len(samples),
        "switches_sequential": switches_since(server, switches) / len(samples),
    }


def start_server(url: str, tree: Path, work: Path) -> ServerProcess:
    """One server process (one worker) running `tree`'s code."""
    env = {**server_env(1), "PYTHONPATH": pythonpath(tree)}
    return ServerProcess(url, work / f"server-{tree.name}.log", env)


def measure_kind(server: ServerProcess, kind: Kind, plan: Plan, work: Path) -> dict[str, float]:
    bodies = [kind.wire(q) for q in queries()]
    # A connection of its own: the last kind's stayed idle through a wrk run, past keep-alive.
    client = Client(server.port)

    def call(i: int) -> None:
        status, body = client.post(kind.path, bodies[i % len(bodies)])
        assert status == 200, (status, body[:300])

    try:
        inprocess.timed_batch(call, len(bodies), cap_s=30.0)  # warm the mirror and the caches
        sequential = _sequential(server, call, plan.requests)
    finally:
        client.close()
    before, switches = server.cpu_seconds(), context_switches(server)
    result = loadgen.run_wrk(
        server.port,
        "POST",
        kind.path,
        loadgen.write_bodies(work / f"bodies-{kind.key}.jsonl", bodies),
        connections=plan.connections,
        seconds=plan.seconds,
    )
    if result.errors:
        raise RuntimeError(f"{result.errors} errors under load ({kind.key})")
    done = max(1, result.requests)
    return {
        **sequential,
        "cpu_ms_loaded": (server.cpu_seconds() - before) * 1000 / done,
        "switches_loaded": switches_since(server, switches) / done,
        "requests_per_s_loaded": result.rate,
        "p50_ms_loaded": result.p50_ms,
    }


def run(plan: Plan, trees: Sequence[Path], entries: int) -> dict[str, Any]:
    """Every tree's server runs throughout; each round measures every kind on each server in
    turn (the order alternates), so old and new meet the same moment of the machine's load."""
    runs: dict[str, list[dict[str, dict[str, float]]]] = {str(t): [] for t in trees}
    with tempfile.TemporaryDirectory(prefix="pc-tax-") as tmp:
        work = Path(tmp)
        url, _ = prepare_database(Database("sqlite", ""), entries, work)
        servers: dict[Path, ServerProcess] = {}
        try:
            for tree in trees:
                servers[tree] = start_server(url, tree, work)
            for r in range(plan.rounds):
                print(f"round {r + 1}/{plan.rounds}", file=sys.stderr, flush=True)
                measured: dict[Path, dict[str, dict[str, float]]] = {t: {} for t in trees}
                for kind in KINDS:
                    for tree in trees if r % 2 == 0 else list(reversed(trees)):
                        measured[tree][kind.key] = measure_kind(servers[tree], kind, plan, work)
                for tree in trees:
                    runs[str(tree)].append(measured[tree])
        finally:
            for server in servers.values():
                server.stop()
    return {tree: summarise(tree_runs) for tree, tree_runs in runs.items()}


def summarise(tree_runs: list[dict[str, dict[str, float]]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind in KINDS:
        per = [r[kind.key] for r in tree_runs]
        out[kind.key] = {name: figure([p[name] for p in per]) for name in per[0]}
        out[kind.key]["cpu_tax"] = figure([p["cpu_ms_loaded"] / p["cpu_ms_sequential"] for p in per])
    for kind in ("assembly", "legacy"):
        ratios = [r[kind]["p50_ms"] / r["search"]["p50_ms"] for r in tree_runs]
        out[kind]["p50_over_search"] = figure(ratios)
    return out


def table(results: dict[str, Any]) -> str:
    columns = (
        ("cpu_ms_sequential", "CPU ms 1 conn"),
        ("cpu_ms_loaded", "CPU ms 8 conn"),
        ("cpu_tax", "8/1"),
        ("switches_sequential", "switches 1 conn"),
        ("switches_loaded", "switches 8 conn"),
        ("p50_ms", "p50 ms 1 conn"),
        ("p50_over_search", "p50 / search"),
        ("requests_per_s_loaded", "req/s 8 conn"),
    )
    lines = ["| code | request | " + " | ".join(label for _, label in columns) + " |"]
    lines.append("|" + " --- |" * (len(columns) + 2))
    for tree, kinds in results.items():
        for kind, figures in kinds.items():
            cells = []
            for key, _ in columns:
                f = figures.get(key)
                cells.append("" if f is None else f"{f['median']:.2f} ({f['min']:.2f}-{f['max']:.2f})")
            lines.append(f"| {tree} | {kind} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.concurrency_tax", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=300, help="sequential requests per kind and round")
    parser.add_argument("--seconds", type=int, default=4, help="wrk run per kind and round")
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--baseline", type=Path, help="a checkout of the code to compare with")
    parser.add_argument("--out", type=Path, help="write the figures as JSON here too")
    args = parser.parse_args(argv)
    if not loadgen.wrk_available():
        print("wrk is not installed (make bench installs it)", file=sys.stderr)
        return 1
    plan = Plan(args.rounds, args.requests, args.seconds, args.connections)
    trees = [REPO] + ([args.baseline.resolve()] if args.baseline else [])
    results = run(plan, trees, args.entries)
    print(table(results))
    if args.out:  # the runs behind each median too
        args.out.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
