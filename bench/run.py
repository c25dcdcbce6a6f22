"""`make bench`: every figure, per database and corpus size, into bench/results/latest.json.

    .venv/bin/python -m bench.run                 # 1k, 10k, 100k entries per Scope
    .venv/bin/python -m bench.run --quick         # 1k, 10k
    BENCH_OCEANBASE_URL='mysql://…/pcbench_{n}' .venv/bin/python -m bench.run   # adds OceanBase

Method (also in docs/benchmarks.md): each figure is measured in `repeats` runs that interleave the
thing measured with its baseline, and reported as the median over runs with the min and max. See
`bench/render.py` for the table and `bench/targets.py` for the issue's targets.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from devtools.server_process import REPO, Client, ServerProcess
from powercontext_runtime import (
    ScopedContextApplication,
    Settings,
    Store,
    copy_database,
    open_store,
    terms_sources,
)
from powercontext_server import keep_freed_memory

from . import inprocess, loadgen, seekdb
from .datagen import CorpusSpec, is_seeded, memory_text, numbered, queries, seed
from .metrics_cost import metrics_cpu_us
from .render import console_table
from .scenarios import ASSEMBLY_MAX_ENTRIES, MODES, Mode
from .stats import figure, latency_figures, latency_run
from .targets import evaluate

BENCH = Path(__file__).resolve().parent
DEFAULT_OUT = BENCH / "results" / "latest.json"
CACHE = BENCH / ".cache"
# What decides the rows a seeded database holds besides the generator: tokenising and the index's
# terms. Schema changes need no reseed, since opening a cached corpus applies any new migrations.
INDEX_SOURCES = terms_sources()
HEALTH = "health"


@dataclass(frozen=True)
class Plan:
    sizes: tuple[int, ...]
    repeats: int = 5
    latency_requests: int = 64
    latency_cap_s: float = 3.0
    throughput_repeats: int = 3
    throughput_seconds: int = 5
    connections: int = 8
    ingest_repeats: int = 3
    ingest_seconds: int = 3
    fit_repeats: int = 5


def log(message: str) -> None:
    """Progress: on a terminal only, so a redirected run writes just its results."""
    if sys.stderr.isatty():
        print(message, file=sys.stderr, flush=True)


# Databases ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Database:
    name: str
    url_template: str  # "{n}" stands for the corpus size

    def url(self, n: int) -> str:
        return self.url_template.replace("{n}", str(n))


def databases(selected: Sequence[str]) -> tuple[list[Database], dict[str, str]]:
    """The backends to run and, for the others, why not."""
    found: list[Database] = []
    skipped: dict[str, str] = {}
    for name in selected:
        if name == "sqlite":
            found.append(Database("sqlite", "sqlite:///{n}"))  # placeholder: per-run file, see below
        elif name == "oceanbase":
            url = os.environ.get("BENCH_OCEANBASE_URL", "")
            if url:
                found.append(Database("oceanbase", url))
            else:
                skipped["oceanbase"] = (
                    "not measured in this run: set BENCH_OCEANBASE_URL=seekdb (the seekdb server of "
                    "the pylibseekdb wheel, started and stopped by the benchmark) or to a "
                    "mysql+pymysql:// URL whose database name contains {n}"
                )
        else:
            skipped[name] = "unknown backend"
    return found, skipped


def open_app(url: str) -> tuple[ScopedContextApplication, Store]:
    store = open_store(url)
    settings = Settings(database_url=url, assembly_max_entries=ASSEMBLY_MAX_ENTRIES)
    return ScopedContextApplication(store, settings), store


def prepare_database(db: Database, n: int, run_dir: Path) -> tuple[str, dict[str, Any]]:
    """A database holding the corpus of size n: (URL to benchmark, seeding facts)."""
    spec = CorpusSpec(n)
    fingerprint = spec.fingerprint(INDEX_SOURCES)
    if db.name == "sqlite":
        cached, facts = _sqlite_corpus(spec, fingerprint)
        target = run_dir / f"sqlite-{n}.sqlite3"
        shutil.copyfile(cached, target)  # the run writes (ingest); the cached corpus stays as seeded
        facts["file_mib"] = round(target.stat().st_size / 2**20, 1)
        return f"sqlite:///{target}", facts
    url = db.url(n)
    if url.startswith("mysql"):
        seekdb.create_database(url)
    app, _ = open_app(url)
    try:
        seeded = is_seeded(app, fingerprint)
    finally:
        app.close()
    if seeded:
        return url, {"cached": True}
    # The same rows the Runtime wrote into the SQLite corpus, moved as `powercontext copy-store`
    # moves a deployment: far faster than replaying 4 × n remembers over OceanBase round trips.
    cached, _ = _sqlite_corpus(spec, fingerprint)  # only when the database lacks the corpus
    log(f"  copying the {n} corpus from SQLite into {db.name}")
    report = copy_database(f"sqlite:///{cached}", url)
    rows = sum(report.rows.values())
    return url, {"cached": False, "copied_rows": rows, "seconds": report.seconds}


def _sqlite_corpus(spec: CorpusSpec, fingerprint: str) -> tuple[Path, dict[str, Any]]:
    """The cached SQLite corpus file, seeded through the Runtime if missing, and how it came about."""
    CACHE.mkdir(exist_ok=True)
    n = spec.entries_per_scope
    cached = CACHE / f"sqlite-{n}-{fingerprint}.sqlite3"
    if cached.exists():
        return cached, {"cached": True}
    for stale in CACHE.glob(f"sqlite-{n}-*"):
        stale.unlink()
    building = cached.with_suffix(".building")
    for leftover in CACHE.glob(building.name + "*"):
        leftover.unlink()
    app, store = open_app(f"sqlite:///{building}")
    started = time.perf_counter()
    try:
        facts: dict[str, Any] = {"cached": False, "remember_per_s": seed(app, store, spec, fingerprint, log)}
    finally:
        app.close()
    facts["seconds"] = time.perf_counter() - started
    _checkpoint(building)
    building.rename(cached)
    return cached, facts


def _checkpoint(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("PRAGMA journal_mode=DELETE")
    conn.close()


# Phases -------------------------------------------------------------------------------------------
def in_process_phase(url: str, plan: Plan, qs: Sequence[str], n: int) -> dict[str, Any]:
    app, store = open_app(url)
    try:
        for mode in MODES:  # warm the caches: each query once per mode, or as many as fit the cap
            inprocess.prepare_runs(app, store, mode, qs, offset=0, count=len(qs), cap_s=plan.latency_cap_s)
        runs: dict[str, list[tuple[dict[str, float], dict[str, float]]]] = {m.key: [] for m in MODES}
        ingest: list[float] = []
        for r in range(plan.repeats):
            for mode in MODES:
                runs[mode.key].append(
                    inprocess.prepare_runs(
                        app,
                        store,
                        mode,
                        qs,
                        offset=r * 7,
                        count=plan.latency_requests,
                        cap_s=plan.latency_cap_s,
                    )
                )
            if r < plan.ingest_repeats:
                scope = f"bench:ingest-inprocess-{n}-{r}-{random.randrange(10**9)}"
                ingest.append(inprocess.remember_rate(app, scope, plan.ingest_seconds, seed=r))
        out: dict[str, Any] = {}
        for mode in MODES:
            out[mode.key] = {
                "prepare": latency_figures([full for full, _ in runs[mode.key]]),
                "raw_reads": latency_figures([base for _, base in runs[mode.key]]),
            }
        out["remember_per_s"] = figure(ingest)
        return out
    finally:
        app.close()


def _sequential(
    client: Client, server: ServerProcess, call: Callable[[int], None], plan: Plan
) -> tuple[dict[str, float], float]:
    """One repeat over HTTP from one client: latency run and server CPU ms per request."""
    cpu = server.cpu_seconds()
    samples = inprocess.timed_batch(call, plan.latency_requests, plan.latency_cap_s)
    cpu_ms = (server.cpu_seconds() - cpu) * 1000 / len(samples)
    return latency_run(samples), cpu_ms


def server_env(workers: int = 1) -> dict[str, str]:
    return {
        "POWERCONTEXT_SERVER_RUNTIME_CONTEXT_ASSEMBLY_MAX_ENTRIES": str(ASSEMBLY_MAX_ENTRIES),
        "POWERCONTEXT_SERVER_WORKERS": str(workers),
    }


def _prepare_call(client: Client, mode: Mode, qs: Sequence[str], offset: int) -> Callable[[int], None]:
    bodies = [mode.wire(q) for q in qs]

    def call(i: int) -> None:
        status, body = client.post("/v1/context/prepare", bodies[(offset + i) % len(bodies)])
        assert status == 200, (status, body[:300])

    return call


def http_phase(url: str, plan: Plan, qs: Sequence[str], n: int, run_dir: Path) -> dict[str, Any]:
    """Latency, CPU, memory and ingest on one server process; throughput on one per core."""
    server = ServerProcess(url, run_dir / f"server-{n}.log", server_env())
    try:
        client = Client(server.port)
        for _ in range(50):
            client.get("/health/live")
        idle_hwm = server.status_kib("VmHWM")

        def health(_i: int) -> None:
            status, _ = client.get("/health/live")
            assert status == 200, status

        for mode in MODES:  # warm-up
            inprocess.timed_batch(_prepare_call(client, mode, qs, 0), len(qs), plan.latency_cap_s)
        latency: dict[str, list[dict[str, float]]] = {HEALTH: [], **{m.key: [] for m in MODES}}
        cpu: dict[str, list[float]] = {HEALTH: [], **{m.key: [] for m in MODES}}
        for r in range(plan.repeats):
            run, cpu_ms = _sequential(client, server, health, plan)
            latency[HEALTH].append(run)
            cpu[HEALTH].append(cpu_ms)
            for mode in MODES:
                run, cpu_ms = _sequential(client, server, _prepare_call(client, mode, qs, r * 7), plan)
                latency[mode.key].append(run)
                cpu[mode.key].append(cpu_ms)
        client.close()
        peak_hwm = server.status_kib("VmHWM")
        if loadgen.wrk_available():
            ingest = http_ingest(server, plan, n, run_dir)
    finally:
        server.stop()
    if loadgen.wrk_available():
        throughput = http_throughput(url, plan, qs, n, run_dir)
    else:
        throughput = {"skipped": "wrk is not installed (make bench installs it)"}
        ingest = {"skipped": "wrk is not installed"}
    return {
        "latency": {k: latency_figures(v) for k, v in latency.items()},
        "cpu_ms_per_request": {k: figure(v) for k, v in cpu.items()},
        "throughput": throughput,
        "ingest": ingest,
        "memory_kib": {"idle_peak": idle_hwm, "peak": peak_hwm},
    }


def http_throughput(url: str, plan: Plan, qs: Sequence[str], n: int, run_dir: Path) -> dict[str, Any]:
    """Requests per second from wrk's concurrent connections, against one worker per core."""
    workers = os.cpu_count() or 1
    server = ServerProcess(url, run_dir / f"server-{n}-workers.log", server_env(workers))
    try:
        client = Client(server.port)
        for mode in MODES:  # each worker warms its own search mirror
            for offset in range(workers * 2):
                inprocess.timed_batch(_prepare_call(client, mode, qs, offset), len(qs), plan.latency_cap_s)
        client.close()
        files = {
            m.key: loadgen.write_bodies(run_dir / f"bodies-{m.key}.jsonl", [m.wire(q) for q in qs])
            for m in MODES
        }
        rates: dict[str, list[float]] = {HEALTH: [], **{m.key: [] for m in MODES}}
        load_cpu: dict[str, list[float]] = {HEALTH: [], **{m.key: [] for m in MODES}}
        errors = 0
        for _ in range(plan.throughput_repeats):
            for key in rates:
                before = server.cpu_seconds()
                result = loadgen.run_wrk(
                    server.port,
                    "GET" if key == HEALTH else "POST",
                    "/health/live" if key == HEALTH else "/v1/context/prepare",
                    None if key == HEALTH else files[key],
                    connections=plan.connections,
                    seconds=plan.throughput_seconds,
                )
                errors += result.errors
                rates[key].append(result.rate)
                load_cpu[key].append((server.cpu_seconds() - before) * 1000 / max(1, result.requests))
        return {
            "workers": workers,
            "requests_per_s": {k: figure(v) for k, v in rates.items()},
            "cpu_ms_per_request": {k: figure(v) for k, v in load_cpu.items()},
            "errors": errors,
            "memory_kib": server.status_kib("VmHWM"),
        }
    finally:
        server.stop()


# More single remembers a second than one client has come near (some 1,000 at best).
_INGEST_BODIES_PER_S = 4000


def http_ingest(server: ServerProcess, plan: Plan, n: int, run_dir: Path) -> dict[str, Any]:
    """Remembers per second over HTTP from one client (wrk, one connection), into fresh Scopes.
    wrk sends the bodies in turn and starts again at the end: there are more than a run can send,
    each `numbered`, so none repeats."""
    rng = random.Random(n)
    base = [memory_text(rng) for _ in range(1024)]
    texts = [numbered(base, i) for i in range(_INGEST_BODIES_PER_S * plan.ingest_seconds)]
    client = Client(server.port)
    rates: list[float] = []
    cpu: list[float] = []
    errors = 0
    try:
        for r in range(plan.ingest_repeats):
            scope_id = f"bench:ingest-http-{n}-{r}-{random.randrange(10**9)}"
            status, _ = client.post("/v1/scopes", json.dumps({"scope_id": scope_id}).encode())
            assert status == 201, status
            bodies = [
                json.dumps({"scope_id": scope_id, "text": t}, ensure_ascii=False).encode() for t in texts
            ]
            file = loadgen.write_bodies(run_dir / "bodies-remember.jsonl", bodies)
            before = server.cpu_seconds()
            result = loadgen.run_wrk(
                server.port,
                "POST",
                "/v1/memory/remember",
                file,
                connections=1,
                threads=1,
                seconds=plan.ingest_seconds,
            )
            errors += result.errors
            rates.append(result.rate)
            cpu.append((server.cpu_seconds() - before) * 1000 / max(1, result.requests))
    finally:
        client.close()
    return {"remember_per_s": figure(rates), "cpu_ms_per_request": figure(cpu), "errors": errors}


def measure_size(db: Database, n: int, plan: Plan, qs: Sequence[str], run_dir: Path) -> dict[str, Any]:
    log(f"[{db.name} n={n}] database")
    url, facts = prepare_database(db, n, run_dir)
    try:
        log(f"[{db.name} n={n}] in process")
        inproc = in_process_phase(url, plan, qs, n)
        log(f"[{db.name} n={n}] over HTTP")
        over_http = http_phase(url, plan, qs, n, run_dir)
    finally:
        if db.name == "sqlite":
            Path(url[len("sqlite:///") :]).unlink(missing_ok=True)
    return {"seed": facts, "in_process": inproc, "http": over_http}


# Machine ------------------------------------------------------------------------------------------
def machine() -> dict[str, Any]:
    cpu_model = "unknown"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu_model = line.split(":", 1)[1].strip()
            break
    mem_kib = next(
        int(line.split()[1])
        for line in Path("/proc/meminfo").read_text().splitlines()
        if line.startswith("MemTotal:")
    )
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True, check=False
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    if dirty:
        commit += " with uncommitted changes"
    return {
        "cpu": cpu_model,
        "cores": os.cpu_count(),
        "memory_gib": round(mem_kib / 2**20, 1),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "load_generator": loadgen.wrk_version(),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "commit": commit,
    }


# Main ---------------------------------------------------------------------------------------------
def run(plan: Plan, selected: Sequence[str]) -> dict[str, Any]:
    qs = queries()
    dbs, skipped = databases(selected)
    results: dict[str, Any] = {
        "generated_at": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "machine": machine(),
        "plan": plan.__dict__ | {"queries": len(qs), "modes": {m.key: m.label for m in MODES}},
        "skipped": skipped,
        "databases": {},
    }
    started = time.perf_counter()
    log(f"fitting micro-benchmark ({plan.fit_repeats} runs)")
    fit = inprocess.fitting_runs(plan.fit_repeats)
    results["fitting_ms"] = {k: figure(v) for k, v in fit.items()}
    log(f"metrics bookkeeping micro-benchmark ({plan.fit_repeats} runs)")
    results["metrics_us"] = {k: figure(v) for k, v in metrics_cpu_us(plan.fit_repeats).items()}
    with tempfile.TemporaryDirectory(prefix="pc-bench-") as tmp:
        run_dir = Path(tmp)
        for db in dbs:
            per_size: dict[str, Any] = {}
            bundled = None
            if db.url_template == "seekdb":
                log("[oceanbase] starting the bundled seekdb server")
                bundled = seekdb.Seekdb(run_dir / "seekdb")
                db = Database(db.name, bundled.url_template)
            sizes = plan.sizes
            if db.name != "sqlite" and os.environ.get("BENCH_OCEANBASE_SIZES"):
                sizes = tuple(int(x) for x in os.environ["BENCH_OCEANBASE_SIZES"].split(","))
            try:
                for n in sizes:
                    try:
                        per_size[str(n)] = measure_size(db, n, plan, qs, run_dir)
                    except Exception as exc:  # one broken size must not lose the others' figures
                        log(f"[{db.name} n={n}] FAILED: {exc!r}")
                        per_size[str(n)] = {"error": f"{type(exc).__name__}: {exc}"}
            finally:
                if bundled is not None:
                    bundled.stop()
            results["databases"][db.name] = per_size
    results["seconds"] = round(time.perf_counter() - started, 1)
    results["targets"] = evaluate(results)
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1k and 10k entries per Scope only")
    parser.add_argument("--sizes", help="comma-separated entries per Scope (overrides --quick)")
    parser.add_argument("--databases", default="sqlite,oceanbase", help="comma-separated backends")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--smoke", action="store_true", help="tiny corpus, short runs: checks the harness")
    args = parser.parse_args(argv)
    keep_freed_memory()  # in-process figures run with the allocator tuned as the server tunes it
    sizes: tuple[int, ...] = (1_000, 10_000) if args.quick else (1_000, 10_000, 100_000)
    if args.sizes:
        sizes = tuple(int(s) for s in args.sizes.split(","))
    plan = Plan(sizes=sizes, repeats=args.repeats)
    if args.smoke:
        plan = Plan(
            sizes=(300,),
            repeats=2,
            latency_requests=16,
            throughput_repeats=1,
            throughput_seconds=1,
            ingest_repeats=1,
            ingest_seconds=1,
            fit_repeats=1,
        )
    results = run(plan, [d.strip() for d in args.databases.split(",") if d.strip()])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")
    print(console_table(results))
    log(f"wrote {args.out} in {results['seconds']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
