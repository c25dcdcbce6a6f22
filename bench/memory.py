"""`make bench-memory`: does `powercontext serve`'s RSS reach a plateau under a constant load?

    .venv/bin/python -m bench.memory                              # 4 windows of 40 s, 3 variants
    .venv/bin/python -m bench.memory --variants tuned,glibc --windows 3 --seconds 20
    .venv/bin/python -m bench.memory --pause 12                   # idle 12 s between windows
    .venv/bin/python -m bench.memory --entries 100000 --windows 0 --latency-rounds 5

Plateau: for each allocator variant (the server's environment, `VARIANTS`) in turn, a fresh
server on a fresh copy of the cached corpus (`bench/datagen.py`: N Memory entries in each of 4
Scopes, the project Scope referencing the other 3) and `--scopes` small Scopes made over HTTP.
After a warm-up, `--clients` threads keep up a constant load for `--windows` windows of
`--seconds`: prepares (legacy and `assembly: {}`) and Memory searches, 70% on the project Scope,
and `--writes` of remembers, the queries drawn from a vocabulary in which new terms keep coming
(the corpus's words, its ticket numbers and file names, and words no entry holds). After each
window: the server's VmRSS, its anonymous memory by kind from /proc/<pid>/smaps (glibc's main
heap, its per-thread arenas, the rest: Python's object arenas and large blocks), and the SQLite
connections it holds open. `--pause` stops the load between windows for that many seconds, as
rounds of requests with a pause between them do (the server's thread pool ends a thread idle
for 10 s).

Latency (`--latency-rounds`): one server per variant at once, each on its own copy of the
corpus; every round sends `--latency` sequential `assembly: {}` prepares of the 32 benchmark
queries to each server in turn, so drift on the machine hits every variant alike. Reported: the
median over rounds of each round's p50, and the server's minor page faults per prepare, which is
what the allocator's thresholds are for (`server/powercontext_server/allocator.py`).
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import math
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from devtools.server_process import Client, ServerProcess

from .datagen import MAIN_SCOPE, REFERENCE_SCOPES, Vocabulary, memory_text, queries
from .process_memory import memory_breakdown, minor_faults, sqlite_connections
from .run import Database, prepare_database, server_env
from .stats import percentile

MIB = 2**20

# The server's environment per variant. POWERCONTEXT_SERVER_MALLOC=default makes `allocator.py`
# leave glibc alone, and glibc's own variables then set the same parameters `mallopt` would.
_THRESHOLDS = {"MALLOC_MMAP_THRESHOLD_": str(32 * MIB), "MALLOC_TRIM_THRESHOLD_": str(128 * MIB)}
VARIANTS: dict[str, dict[str, str]] = {
    "tuned": {},  # what allocator.py does by default
    "glibc": {"POWERCONTEXT_SERVER_MALLOC": "default"},  # no tuning at all
    "thresholds": {"POWERCONTEXT_SERVER_MALLOC": "default", **_THRESHOLDS},  # the tuning until 2 arenas
    "glibc-arena2": {"POWERCONTEXT_SERVER_MALLOC": "default", "MALLOC_ARENA_MAX": "2"},
    "trim32": {  # the tuning (2 arenas) with a trim threshold of 32 MiB
        "POWERCONTEXT_SERVER_MALLOC": "default",
        "MALLOC_ARENA_MAX": "2",
        **_THRESHOLDS,
        "MALLOC_TRIM_THRESHOLD_": str(32 * MIB),
    },
}
DEFAULT_VARIANTS = "tuned,thresholds,glibc"
READS = (("prepare-legacy", 0.4), ("prepare-assembly", 0.4), ("search", 0.2))  # shares of reads


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Plan:
    entries: int = 10_000
    windows: int = 4
    seconds: float = 40.0
    pause: float = 0.0
    clients: int = 4
    scopes: int = 8
    scope_entries: int = 100
    writes: float = 0.1  # the share of remembers among the requests
    closed: bool = False  # queries: only the 32 benchmark questions, no new terms
    warmup: float = 10.0
    latency: int = 64
    latency_rounds: int = 5
    load_seconds: float = 5.0  # per latency round and variant: `clients` threads at once
    env: dict[str, str] = field(default_factory=dict)  # for every variant's server


# Load ---------------------------------------------------------------------------------------------
@dataclass
class Tally:
    lock: threading.Lock = field(default_factory=threading.Lock)
    requests: int = 0
    prepare_s: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def take(self) -> tuple[int, list[float], list[str]]:
        with self.lock:
            out = (self.requests, self.prepare_s, self.errors)
            self.requests, self.prepare_s, self.errors = 0, [], []
            return out


def client_loop(
    plan: Plan, port: int, scopes: Sequence[str], seed: int, running: threading.Event, stop: threading.Event
) -> Iterator[tuple[str, int, bytes, float]]:
    """One client's requests, back to back on one keep-alive connection, while `running` is set,
    until `stop`: (operation, status, answer, seconds) each."""
    rng = random.Random(seed)
    vocabulary = Vocabulary(seed, plan.closed)
    names = [name for name, _ in READS] + ["remember"]
    shares = [share * (1 - plan.writes) for _, share in READS] + [plan.writes]
    client = Client(port)
    try:
        while not stop.is_set():
            if not running.is_set():
                client.close()  # the server closes a connection idle for 5 s; the next request reopens
                running.wait(0.1)
                continue
            operation = rng.choices(names, shares)[0]
            scope = MAIN_SCOPE if rng.random() < 0.7 or not scopes else rng.choice(scopes)
            body: dict[str, Any]
            if operation == "remember":
                path, body = "/v1/memory/remember", {"scope_id": scope, "text": memory_text(rng)}
            elif operation == "search":
                path, body = "/v1/memory/search", {"scope_id": scope, "query": vocabulary.query()}
            else:
                path, body = "/v1/context/prepare", {"scope_id": scope, "query": vocabulary.query()}
                if operation == "prepare-assembly":
                    body["assembly"] = {}
            started = time.perf_counter()
            try:
                status, answer = client.post(path, json.dumps(body, ensure_ascii=False).encode())
            except (OSError, http.client.HTTPException) as exc:
                client.close()
                client = Client(port)
                yield operation, 0, repr(exc).encode(), 0.0
                continue
            yield operation, status, answer, time.perf_counter() - started
    finally:
        client.close()


def run_client(
    plan: Plan,
    port: int,
    scopes: Sequence[str],
    seed: int,
    running: threading.Event,
    stop: threading.Event,
    tally: Tally,
) -> None:
    for operation, status, answer, seconds in client_loop(plan, port, scopes, seed, running, stop):
        with tally.lock:
            tally.requests += 1
            if status != 200:
                tally.errors.append(f"{operation}: {status} {answer[:200]!r}")
            elif operation.startswith("prepare"):
                tally.prepare_s.append(seconds)


def make_scopes(port: int, count: int, entries: int, seed: int) -> list[str]:
    """`count` small Scopes of `entries` Memory entries each, over HTTP; with the corpus's
    reference Scopes, the Scopes the load spreads over besides the project Scope."""
    rng = random.Random(seed)
    client = Client(port)
    made = list(REFERENCE_SCOPES)
    try:
        for i in range(count):
            scope_id = f"bench:memory-{i}"
            status, answer = client.post("/v1/scopes", json.dumps({"scope_id": scope_id}).encode())
            assert status == 201, (status, answer[:200])
            for _ in range(entries):
                body = json.dumps({"scope_id": scope_id, "text": memory_text(rng)}, ensure_ascii=False)
                status, answer = client.post("/v1/memory/remember", body.encode())
                assert status == 200, (status, answer[:200])
            made.append(scope_id)
    finally:
        client.close()
    return made


# What the server holds ----------------------------------------------------------------------------
def snapshot(server: ServerProcess) -> dict[str, Any]:
    return {
        "rss_mib": round(server.status_kib("VmRSS") / 1024, 1),
        "threads": server.status_kib("Threads"),
        "sqlite_connections": sqlite_connections(server.pid),
        **memory_breakdown(server.pid),
    }


# Plateau ------------------------------------------------------------------------------------------
@contextlib.contextmanager
def serving(name: str, plan: Plan, scratch: Path) -> Iterator[tuple[ServerProcess, Path]]:
    """A server of the variant on its own copy of the corpus (its own directory: the database and
    its WAL, never a predecessor's); yields it and its log."""
    run_dir = scratch / name
    run_dir.mkdir(parents=True)
    url, _ = prepare_database(Database("sqlite", "sqlite:///{n}"), plan.entries, run_dir)
    log_path = scratch / f"server-{name}.log"
    server = ServerProcess(url, log_path, server_env() | VARIANTS[name] | plan.env)
    try:
        yield server, log_path
    finally:
        server.stop()
        shutil.rmtree(run_dir, ignore_errors=True)


def plateau(name: str, plan: Plan, scratch: Path) -> dict[str, Any]:
    running, stop = threading.Event(), threading.Event()
    tally = Tally()
    threads: list[threading.Thread] = []
    windows: list[dict[str, Any]] = []
    with serving(name, plan, scratch) as (server, log_path):
        try:
            scopes = make_scopes(server.port, plan.scopes, plan.scope_entries, seed=7)
            running.set()
            for i in range(plan.clients):
                args = (plan, server.port, scopes, 1000 + i, running, stop, tally)
                thread = threading.Thread(target=run_client, args=args, daemon=True)
                thread.start()
                threads.append(thread)
            time.sleep(plan.warmup)
            tally.take()
            warm = snapshot(server)
            log(f"  [{name}] warm: {warm}")
            for w in range(plan.windows):
                if plan.pause and w:
                    running.clear()
                    time.sleep(plan.pause)
                    tally.take()
                    running.set()
                time.sleep(plan.seconds)
                requests, prepare_s, errors = tally.take()
                window = snapshot(server) | {
                    "requests_per_s": round(requests / plan.seconds, 1),
                    "prepare_p50_ms": round(percentile([s * 1000 for s in prepare_s], 50), 2),
                    "errors": len(errors),
                }
                log(f"  [{name}] window {w + 1}: {window}")
                if errors:
                    log(f"  [{name}] window {w + 1}: {len(errors)} errors, the first: {errors[0]}")
                windows.append(window)
        finally:
            stop.set()
            for thread in threads:
                thread.join()
        if any(w["errors"] for w in windows):
            lines = log_path.read_text(errors="replace").splitlines()
            starts = [i for i, line in enumerate(lines) if line.startswith("Traceback")]
            if starts:
                log(f"  [{name}] the server's last traceback:\n" + "\n".join(lines[starts[-1] :][:40]))
    rss = [w["rss_mib"] for w in windows]
    return {
        "env": VARIANTS[name] | plan.env,
        "warm": warm,
        "windows": windows,
        "second_over_first": round(rss[1] / rss[0], 3) if len(rss) > 1 else None,
        "last_over_first": round(rss[-1] / rss[0], 3) if rss else None,
    }


# Latency ------------------------------------------------------------------------------------------
def concurrent(port: int, bodies: Sequence[bytes], clients: int, seconds: float) -> tuple[float, float]:
    """`clients` threads sending prepares back to back for `seconds`: (prepares/s, p50 ms)."""
    samples: list[float] = []
    lock = threading.Lock()
    deadline = time.perf_counter() + seconds

    def one(offset: int) -> None:
        client = Client(port)
        mine: list[float] = []
        try:
            i = offset
            while time.perf_counter() < deadline:
                started = time.perf_counter()
                status, answer = client.post("/v1/context/prepare", bodies[i % len(bodies)])
                mine.append((time.perf_counter() - started) * 1000)
                assert status == 200, (status, answer[:200])
                i += 1
        finally:
            client.close()
            with lock:
                samples.extend(mine)

    threads = [threading.Thread(target=one, args=(k * 5,)) for k in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return len(samples) / seconds, percentile(samples, 50)


def latency(names: Sequence[str], plan: Plan, scratch: Path) -> dict[str, dict[str, float]]:
    """Interleaved rounds against one server per variant: sequential prepares, then (with
    `load_seconds`) prepares from `clients` threads at once."""
    bodies = [json.dumps({"scope_id": MAIN_SCOPE, "query": q, "assembly": {}}).encode() for q in queries()]
    p50s: dict[str, list[float]] = {name: [] for name in names}
    faults: dict[str, list[float]] = {name: [] for name in names}
    rates: dict[str, list[float]] = {name: [] for name in names}
    loaded: dict[str, list[float]] = {name: [] for name in names}
    with contextlib.ExitStack() as stack:
        servers = {name: stack.enter_context(serving(name, plan, scratch))[0] for name in names}
        for name in names:  # every query's terms in the mirror
            client = Client(servers[name].port)
            for body in bodies:
                client.post("/v1/context/prepare", body)
            client.close()
        for r in range(plan.latency_rounds):
            for name in names:
                # A connection per round: the server closes one left idle for 5 s meanwhile.
                client, pid = Client(servers[name].port), servers[name].pid
                client.post("/v1/context/prepare", bodies[0])
                before = minor_faults(pid)
                samples = []
                for i in range(plan.latency):
                    started = time.perf_counter()
                    status, answer = client.post("/v1/context/prepare", bodies[(r * 7 + i) % len(bodies)])
                    samples.append((time.perf_counter() - started) * 1000)
                    assert status == 200, (status, answer[:200])
                faults[name].append((minor_faults(pid) - before) / plan.latency)
                p50s[name].append(percentile(samples, 50))
                client.close()
                if plan.load_seconds:
                    rate, p50 = concurrent(servers[name].port, bodies, plan.clients, plan.load_seconds)
                    rates[name].append(rate)
                    loaded[name].append(p50)
            log(f"  latency round {r + 1}: " + ", ".join(f"{n} {p50s[n][-1]:.2f} ms" for n in names))
    return {
        name: {
            "p50_ms": round(statistics.median(p50s[name]), 2),
            "p50_min_ms": round(min(p50s[name]), 2),
            "p50_max_ms": round(max(p50s[name]), 2),
            "faults_per_prepare": round(statistics.median(faults[name]), 1),
            "load_per_s": round(statistics.median(rates[name]), 1) if rates[name] else math.nan,
            "load_p50_ms": round(statistics.median(loaded[name]), 2) if loaded[name] else math.nan,
        }
        for name in names
    }


# Report -------------------------------------------------------------------------------------------
def table(results: dict[str, Any]) -> str:
    plan = results["plan"]
    lines: list[str] = []
    if results["plateau"]:
        windows = " | ".join(f"window {i + 1}" for i in range(plan["windows"]))
        lines += [
            f"RSS in MiB after each {plan['seconds']:.0f} s window, {plan['entries']} entries per Scope, "
            f"{plan['clients']} clients, pause {plan['pause']:.0f} s:",
            "",
            f"| variant | warm | {windows} | w2/w1 | last/first | arenas first→last | SQLite connections"
            " | prepare p50 under load, ms | requests/s |",
            "| --- " * (8 + plan["windows"]) + "|",
        ]
        for name, r in results["plateau"].items():
            ws = r["windows"]
            rss = " | ".join(f"{w['rss_mib']:.0f}" for w in ws)
            load_p50 = statistics.median([w["prepare_p50_ms"] for w in ws])
            rate = statistics.median([w["requests_per_s"] for w in ws])
            lines.append(
                f"| {name} | {r['warm']['rss_mib']:.0f} | {rss} | {r['second_over_first']}"
                f" | {r['last_over_first']} | {ws[0]['arenas']:.0f}→{ws[-1]['arenas']:.0f}"
                f" | {ws[0]['sqlite_connections']}→{ws[-1]['sqlite_connections']}"
                f" | {load_p50:.2f} | {rate:.0f} |"
            )
    if results["latency"]:
        lines += [
            "",
            f"Sequential `assembly: {{}}` prepares, {plan['entries']} entries per Scope, "
            f"{plan['latency_rounds']} interleaved rounds of {plan['latency']}:",
            "",
            "| variant | p50 ms (median of rounds) | min–max of rounds | page faults per prepare"
            f" | prepares/s, {plan['clients']} clients | p50 ms, {plan['clients']} clients |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        for name, f in results["latency"].items():
            lines.append(
                f"| {name} | {f['p50_ms']:.2f} | {f['p50_min_ms']:.2f}–{f['p50_max_ms']:.2f}"
                f" | {f['faults_per_prepare']} | {f['load_per_s']:.0f} | {f['load_p50_ms']:.2f} |"
            )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.memory", description=__doc__.splitlines()[0])
    parser.add_argument("--variants", default=DEFAULT_VARIANTS, help=f"of: {', '.join(VARIANTS)}")
    parser.add_argument(
        "--entries", type=int, default=Plan.entries, help="Memory entries in each of 4 Scopes"
    )
    parser.add_argument("--windows", type=int, default=Plan.windows)
    parser.add_argument("--seconds", type=float, default=Plan.seconds, help="length of a window")
    parser.add_argument(
        "--pause", type=float, default=Plan.pause, help="seconds without load between windows"
    )
    parser.add_argument("--clients", type=int, default=Plan.clients, help="client threads")
    parser.add_argument("--scopes", type=int, default=Plan.scopes, help="small Scopes made over HTTP")
    parser.add_argument("--writes", type=float, default=Plan.writes, help="share of remembers (0 to 1)")
    parser.add_argument(
        "--vocabulary",
        choices=("open", "closed"),
        default="open",
        help="open: new query terms keep coming (default); closed: the 32 benchmark questions only",
    )
    parser.add_argument("--latency", type=int, default=Plan.latency, help="prepares per latency round")
    parser.add_argument("--latency-rounds", type=int, default=Plan.latency_rounds, help="0: no latency")
    parser.add_argument(
        "--load-seconds", type=float, default=Plan.load_seconds, help="per latency round: concurrent load"
    )
    parser.add_argument(
        "--env", action="append", default=[], metavar="KEY=VALUE", help="for every variant's server"
    )
    parser.add_argument("--out", type=Path, help="write the figures as JSON here")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.variants.split(",") if n.strip()]
    unknown = [n for n in names if n not in VARIANTS]
    if unknown:
        parser.error(f"unknown variant(s): {', '.join(unknown)}")
    plan = Plan(
        entries=args.entries,
        windows=args.windows,
        seconds=args.seconds,
        pause=args.pause,
        clients=args.clients,
        scopes=args.scopes,
        writes=args.writes,
        closed=args.vocabulary == "closed",
        latency=args.latency,
        latency_rounds=args.latency_rounds,
        load_seconds=args.load_seconds,
        env=dict(item.split("=", 1) for item in args.env),
    )
    results: dict[str, Any] = {"plan": asdict(plan), "plateau": {}, "latency": {}}
    with tempfile.TemporaryDirectory(prefix="pc-bench-memory-") as tmp:
        scratch = Path(tmp)
        if plan.windows:
            for name in names:
                log(f"[{name}] {VARIANTS[name] | plan.env}")
                results["plateau"][name] = plateau(name, plan, scratch / "plateau")
        if plan.latency_rounds:
            log(f"[latency] {', '.join(names)}")
            results["latency"] = latency(names, plan, scratch / "latency")
    if args.out:
        args.out.write_text(json.dumps(results, indent=1) + "\n")
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
