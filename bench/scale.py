"""The scale tier: one Scope of a million entries (SQLite) or 200,000 (OceanBase), over HTTP.

Per database: ingest through `POST /v1/memory/remember/batch` into one Scope of a real
`powercontext serve` (entries/s per tenth of the way), the database's size on disk, then a fresh
server process: its first prepare, the first 20 distinct queries (cold p50), warm p50, p95, p99
and slowest over repeated rounds of every query once each has been asked, its resident memory,
prepares/s with wrk against one process and against two processes on the one database, and whether
a write one process acknowledged is found at once through the other. Prints a table and writes
bench/results/scale.json.

    python -m bench.scale [--entries 1000000] [--oceanbase-entries 200000] [--databases sqlite,oceanbase]
                          [--keep DIR] [--at-rest]

With `--keep DIR` a second run (say, of another commit, its code first on PYTHONPATH) measures the
same SQLite database again, so two commits are compared on the same data in one session. A fresh
process right after an ingest finishes the ingest's merges beside the prepares it times; with
`--at-rest` the merges are then carried through (in this process; a kept database stays merged)
and a fresh server is timed again.

Not part of make test: `make bench-scale` runs it (about 15 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from devtools.server_process import Client, ServerProcess
from powercontext_runtime import open_store

from .datagen import memory_text, queries
from .ingest import database
from .loadgen import WrkResult, run_wrk, write_bodies
from .stats import percentile

RESULTS = Path(__file__).resolve().parent / "results" / "scale.json"
SCOPE = "bench:scale"
BATCH = 500  # as make bench-ingest: 1,000 of these texts can pass the request body limit
COLD_QUERIES = 20
WARM_ROUNDS = 10
LOAD_SECONDS = 10
LOAD_CONNECTIONS = 8
VISIBILITY_CHECKS = 50
MIB = 2**20


def _post(client: Client, path: str, body: dict[str, Any]) -> dict[str, Any]:
    status, answer = client.post(path, json.dumps(body, ensure_ascii=False).encode())
    if status not in (200, 201):
        raise RuntimeError(f"{path} answered {status}: {answer[:200]!r}")
    return dict(json.loads(answer))


def _prepare_body(query: str) -> dict[str, Any]:
    return {"scope_id": SCOPE, "query": query}


def ingest(client: Client, entries: int) -> tuple[list[float], float]:
    """Store `entries` distinct texts in batches; entries/s over each tenth of them, and the
    seconds it took in all (the texts' generation left out)."""
    rng = random.Random(11)
    pool = [memory_text(rng) for _ in range(8192)]
    tenth = max(1, entries // 10)
    rates: list[float] = []
    started = began = time.perf_counter()
    stored = 0
    while stored < entries:
        size = min(BATCH, entries - stored)
        texts = [f"{pool[(stored + i) % len(pool)]} (#{stored + i})" for i in range(size)]
        _post(
            client, "/v1/memory/remember/batch", {"scope_id": SCOPE, "entries": [{"text": t} for t in texts]}
        )
        stored += size
        if stored % tenth == 0 or stored == entries:
            now = time.perf_counter()
            rates.append((stored - tenth * (len(rates))) / (now - started))
            started = now
            print(f"  {stored:>9,} entries stored, {rates[-1]:,.0f}/s over the last tenth", flush=True)
    return rates, time.perf_counter() - began


def size_on_disk(scratch: Path) -> int:
    """Bytes of every file under the database's directory (the SQLite file and its log, or
    seekdb's data directory), server logs left out."""
    return sum(
        p.stat().st_size for p in scratch.rglob("*") if p.is_file() and not p.name.startswith("server")
    )


def timed_prepare(client: Client, query: str) -> float:
    began = time.perf_counter()
    _post(client, "/v1/context/prepare", _prepare_body(query))
    return (time.perf_counter() - began) * 1000


def latencies(client: Client, asked: Sequence[str]) -> dict[str, float]:
    """A fresh process's first prepare, the cold p50 of the first distinct queries, then the warm
    p50, p95, p99 and slowest."""
    first = timed_prepare(client, asked[0])
    cold = [timed_prepare(client, q) for q in asked[1 : COLD_QUERIES + 1]]
    for q in asked[COLD_QUERIES + 1 :]:  # the rest of the queries' first reads are cold too, not warm
        timed_prepare(client, q)
    warm = [timed_prepare(client, q) for _ in range(WARM_ROUNDS) for q in asked]
    return {
        "first_ms": first,
        "cold_p50_ms": percentile(cold, 50),
        "warm_p50_ms": percentile(warm, 50),
        "warm_p95_ms": percentile(warm, 95),
        # The tail itself: a p95 far above the p50 says little without it.
        "warm_p99_ms": percentile(warm, 99),
        "warm_max_ms": max(warm),
    }


def throughput(ports: Sequence[int], bodies: Path) -> float:
    """Prepares/s with LOAD_CONNECTIONS wrk connections shared out over the processes at `ports`."""
    results: list[WrkResult] = []

    def load(port: int) -> None:
        results.append(
            run_wrk(
                port,
                "POST",
                "/v1/context/prepare",
                bodies,
                connections=LOAD_CONNECTIONS // len(ports),
                seconds=LOAD_SECONDS,
                threads=1,
            )
        )

    threads = [threading.Thread(target=load, args=(port,)) for port in ports]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if any(r.errors for r in results):
        raise RuntimeError(f"wrk saw errors: {results}")
    return sum(r.requests / r.seconds for r in results)


def visible_at_once(writer: Client, reader: Client) -> int:
    """How many of VISIBILITY_CHECKS writes acknowledged through one process the other process's
    search finds in the very next request."""
    found = 0
    for _ in range(VISIBILITY_CHECKS):
        token = f"zq{uuid.uuid4().hex[:12]}"
        _post(writer, "/v1/memory/remember", {"scope_id": SCOPE, "text": f"scale check {token}"})
        hits = _post(reader, "/v1/memory/search", {"scope_id": SCOPE, "query": token, "limit": 1})["hits"]
        found += any(token in hit["text"] for hit in hits)
    return found


def measure(name: str, entries: int, scratch: Path, at_rest: bool = False) -> dict[str, Any]:
    """The figures of one database. A SQLite database `scratch` already holds from an earlier run
    with `--keep` is measured again without ingesting (to compare two commits on one database).
    With `at_rest`, the latencies of a fresh process once every merge is done, as well."""
    kept = scratch / "ingest.json"
    reuse = name == "sqlite" and kept.exists()
    scratch.mkdir(parents=True, exist_ok=True)
    with database(name, scratch) as url:
        if reuse:
            out = json.loads(kept.read_text())
        else:
            out = _ingested(url, entries, scratch)
            if name == "sqlite":
                kept.write_text(json.dumps(out) + "\n")
        out = _reads(url, scratch, out)
        if at_rest:
            out["at_rest"] = _at_rest(url, scratch)
        return out


def _ingested(url: str, entries: int, scratch: Path) -> dict[str, Any]:
    out: dict[str, Any] = {"entries": entries}
    loader = ServerProcess(url, scratch / "server-load.log")
    client = Client(loader.port)
    try:
        _post(client, "/v1/scopes", {"scope_id": SCOPE})
        print(f"ingesting {entries:,} entries into one Scope", flush=True)
        out["ingest_per_tenth"], out["ingest_seconds"] = ingest(client, entries)
    finally:
        client.close()
        loader.stop()
    out["bytes_on_disk"] = size_on_disk(scratch)
    return out


def _reads(url: str, scratch: Path, ingested: dict[str, Any]) -> dict[str, Any]:
    """A fresh process's latencies and memory, then throughput and visibility with two processes."""
    out = dict(ingested)
    asked = queries()
    bodies = write_bodies(
        scratch / "bodies.txt", [json.dumps(_prepare_body(q), ensure_ascii=False).encode() for q in asked]
    )
    first = ServerProcess(url, scratch / "server-a.log")
    second: ServerProcess | None = None
    client = Client(first.port)
    try:
        out["latency"] = latencies(client, asked)
        out["rss_mib_after_warm"] = first.status_kib("VmRSS") / 1024
        out["prepares_per_s_one_process"] = throughput([first.port], bodies)
        second = ServerProcess(url, scratch / "server-b.log")
        other = Client(second.port)
        timed_prepare(other, asked[0])  # its own cold start is not the two-process figure
        out["prepares_per_s_two_processes"] = throughput([first.port, second.port], bodies)
        out["rss_mib_second_process"] = second.status_kib("VmRSS") / 1024
        other.close()
        # Fresh connections: the server closed the idle ones while wrk ran.
        writer, reader = Client(first.port), Client(second.port)
        out["visible_at_once"] = f"{visible_at_once(writer, reader)}/{VISIBILITY_CHECKS}"
        writer.close()
        reader.close()
    finally:
        client.close()
        first.stop()
        if second is not None:
            second.stop()
    return out


def _at_rest(url: str, scratch: Path) -> dict[str, Any]:
    """Every merge the ingest left carried through in this process (no server runs meanwhile),
    then a fresh process's latencies: the index as it stands once writes stop for a while."""
    store = open_store(url)
    try:
        began = time.perf_counter()
        chunks = store.merge_index()
        seconds = time.perf_counter() - began
    finally:
        store.close()
    server = ServerProcess(url, scratch / "server-rest.log")
    client = Client(server.port)
    try:
        # The store's own merger thread may take some of the chunks; the seconds are until none is left.
        return {"merge_chunks": chunks, "merge_seconds": seconds, "latency": latencies(client, queries())}
    finally:
        client.close()
        server.stop()


def report(results: dict[str, Any]) -> None:
    for name, r in results.items():
        lat = r["latency"]
        tenths = ", ".join(f"{rate / 1000:.1f}k" for rate in r["ingest_per_tenth"])
        print(f"\n{name}: {r['entries']:,} entries in one Scope")
        print(f"  ingest: {r['entries'] / r['ingest_seconds']:,.0f}/s overall; per tenth {tenths}")
        print(f"  on disk: {r['bytes_on_disk'] / MIB:,.0f} MiB")
        print(
            f"  fresh process: first prepare {lat['first_ms']:.0f} ms, cold p50 of the next"
            f" {COLD_QUERIES} queries {lat['cold_p50_ms']:.1f} ms"
        )
        print(
            f"  warm: p50 {lat['warm_p50_ms']:.1f} ms, p95 {lat['warm_p95_ms']:.1f} ms,"
            f" p99 {lat['warm_p99_ms']:.1f} ms, slowest {lat['warm_max_ms']:.1f} ms"
        )
        print(
            f"  RSS: {r['rss_mib_after_warm']:.0f} MiB after the warm run, second process {r['rss_mib_second_process']:.0f} MiB"
        )
        print(
            f"  prepares/s ({LOAD_CONNECTIONS} wrk connections): one process {r['prepares_per_s_one_process']:,.0f},"
            f" two processes {r['prepares_per_s_two_processes']:,.0f}"
        )
        print(f"  a write through one process found at once through the other: {r['visible_at_once']}")
        if "at_rest" in r:
            rest = r["at_rest"]
            lat = rest["latency"]
            print(
                f"  at rest (the merges left finished in {rest['merge_seconds']:.1f} s in process),"
                f" a fresh process: first prepare {lat['first_ms']:.0f} ms, cold p50 {lat['cold_p50_ms']:.1f} ms,"
                f" warm p50 {lat['warm_p50_ms']:.1f} ms, p95 {lat['warm_p95_ms']:.1f} ms,"
                f" p99 {lat['warm_p99_ms']:.1f} ms, slowest {lat['warm_max_ms']:.1f} ms"
            )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=1_000_000, help="Entries on SQLite (1,000,000).")
    parser.add_argument(
        "--oceanbase-entries", type=int, default=200_000, help="Entries on OceanBase (200,000)."
    )
    parser.add_argument("--databases", default="sqlite,oceanbase", help="Comma-separated backends.")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument(
        "--keep",
        type=Path,
        default=None,
        help="Keep the databases in this directory; a SQLite one found there is measured again without ingesting.",
    )
    parser.add_argument(
        "--at-rest",
        action="store_true",
        help="Then carry the ingest's merges through and time a fresh process again.",
    )
    args = parser.parse_args(argv)
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="pc-scale-") as temporary:
        scratch = args.keep or Path(temporary)
        for name in args.databases.split(","):
            entries = args.oceanbase_entries if name == "oceanbase" else args.entries
            results[name] = measure(name, entries, scratch / name, args.at_rest)
    report(results)
    args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
