"""Ingest over HTTP: batch remember against one remember per request, on SQLite and OceanBase.

One client on one keep-alive connection posts the same generated entries (bench/datagen.py: 60 %
English, 30 % Chinese, 10 % mixed, 2 % long) into a fresh Scope of a real `powercontext serve`
process, first one entry per request (the baseline), then in batches. Prints entries/s and server
CPU per entry, and writes bench/results/ingest.json.

    python -m bench.ingest [--seconds 10] [--batch 500] [--databases sqlite,oceanbase]

`--embedding-leg` measures instead what the embedding leg costs ingest: two servers on two
databases, one with the leg on, take turns a round at a time with the same batches. Their
vectors come from WordLlama (`devtools.embedding_models`, well under a millisecond a text) served
on loopback by this process, so the figures are the server's own cost of the leg: its background
embedder asking for vectors and storing them beside the writes.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from devtools.embedding_models import WORDLLAMA
from devtools.embedding_server import EmbeddingServer
from devtools.seekdb import SeekdbServer
from devtools.server_process import Client, ServerProcess

from .datagen import memory_text, numbered
from .embedded import wait_embedded

RESULTS = Path(__file__).resolve().parent / "results" / "ingest.json"


@contextmanager
def database(name: str, scratch: Path) -> Iterator[str]:
    if name == "sqlite":
        yield f"sqlite:///{scratch / 'ingest.sqlite3'}"
        return
    (scratch / "seekdb").mkdir()
    seekdb = SeekdbServer(scratch / "seekdb")
    try:
        yield seekdb.new_database_url()
    finally:
        seekdb.stop()


def ingest(
    client: Client,
    scope_id: str,
    texts: Sequence[str],
    batch: int,
    seconds: float,
    offset: int = 0,
    check: bool = True,
) -> int:
    """Entries stored in `seconds`, `batch` per request (1: the single remember operation), numbered
    from `offset`; `check` False turns the server's duplicate check off."""
    stored = 0
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        chunk = [numbered(texts, offset + i) for i in range(batch)]
        body: dict[str, Any]
        offset += batch
        if batch == 1:
            path, body = "/v1/memory/remember", {"scope_id": scope_id, "text": chunk[0]}
        else:
            path, body = (
                "/v1/memory/remember/batch",
                {"scope_id": scope_id, "entries": [{"text": t} for t in chunk], "deduplicate": check},
            )
        status, answer = client.post(path, json.dumps(body, ensure_ascii=False).encode())
        if status != 200:
            raise RuntimeError(f"{path} answered {status}: {answer[:200]!r}")
        stored += batch
    return stored


def measure(name: str, batch: int, seconds: float, scratch: Path) -> dict[str, Any]:
    rng = random.Random(7)
    texts = [memory_text(rng) for _ in range(4096)]
    out: dict[str, Any] = {}
    scratch.mkdir(parents=True)
    with database(name, scratch) as url:
        server = ServerProcess(url, scratch / f"server-{name}.log")
        client = Client(server.port)
        try:
            out["single"] = _rate(server, client, texts, 1, [seconds])
            # Batches with the duplicate check and without it, in alternating rounds into one Scope
            # each, so load on the machine weighs on both alike.
            rounds = [seconds / _ROUNDS] * _ROUNDS
            out["batch"], out["batch_unchecked"] = _rate(server, client, texts, batch, rounds, both=True)
        finally:
            client.close()
            server.stop()
    return out


_ROUNDS = 5


def _rate(
    server: ServerProcess,
    client: Client,
    texts: Sequence[str],
    size: int,
    rounds: list[float],
    both: bool = False,
) -> Any:
    """entries/s and server CPU per entry over `rounds` (seconds each); with `both`, the same for
    batches without the duplicate check, in rounds alternating with the checked ones."""
    checks = (True, False) if both else (True,)
    scopes, totals = {}, {check: [0, 0.0, 0.0] for check in checks}  # entries, seconds, CPU seconds
    for check in checks:
        scopes[check] = f"bench:ingest-{size}-{check}-{random.randrange(10**9)}"
        status, _ = client.post("/v1/scopes", json.dumps({"scope_id": scopes[check]}).encode())
        assert status == 201, status
    for seconds in rounds:
        for check in checks:
            cpu, started = server.cpu_seconds(), time.perf_counter()
            stored = ingest(client, scopes[check], texts, size, seconds, int(totals[check][0]), check)
            totals[check][0] += stored
            totals[check][1] += time.perf_counter() - started
            totals[check][2] += server.cpu_seconds() - cpu
    figures = [
        {
            "entries": int(entries),
            "entries_per_s": entries / elapsed,
            "cpu_ms_per_entry": cpu * 1000 / entries,
        }
        for entries, elapsed, cpu in totals.values()
    ]
    return tuple(figures) if both else figures[0]


def measure_leg(name: str, batch: int, seconds: float, scratch: Path) -> dict[str, Any]:
    """entries/s and server CPU per entry in batches, with the embedding leg off and on."""
    rng = random.Random(7)
    texts = [memory_text(rng) for _ in range(4096)]
    for key in ("off", "on"):
        (scratch / key).mkdir(parents=True)
    with EmbeddingServer(WORDLLAMA.load(), WORDLLAMA.name) as model:
        leg = {
            "POWERCONTEXT_SERVER_EMBEDDING_URL": model.url,
            "POWERCONTEXT_SERVER_EMBEDDING_MODEL": WORDLLAMA.name,
            "POWERCONTEXT_SERVER_EMBEDDING_DIMENSIONS": str(WORDLLAMA.dimensions),
        }
        with database(name, scratch / "off") as off_url, database(name, scratch / "on") as on_url:
            servers = {
                "off": ServerProcess(off_url, scratch / f"server-{name}-off.log"),
                "on": ServerProcess(on_url, scratch / f"server-{name}-on.log", leg),
            }
            scopes = {key: f"bench:ingest-leg-{key}" for key in servers}
            totals = {key: [0, 0.0, 0.0] for key in servers}  # entries, seconds, CPU seconds
            began = {key: server.cpu_seconds() for key, server in servers.items()}
            try:
                for _ in range(_ROUNDS):
                    for key, server in servers.items():
                        # A connection per round: one left idle through the other's round outlives
                        # the server's keep-alive.
                        client = Client(server.port)
                        if not totals[key][0]:
                            body = json.dumps({"scope_id": scopes[key]}).encode()
                            assert client.post("/v1/scopes", body)[0] == 201
                        started = time.perf_counter()
                        stored = ingest(
                            client, scopes[key], texts, batch, seconds / _ROUNDS, int(totals[key][0])
                        )
                        totals[key][0] += stored
                        totals[key][1] += time.perf_counter() - started
                        client.close()
                # The embedder works on between its server's rounds and after the last: CPU counts
                # from the start until every stored entry has its vector.
                wait_embedded(on_url, WORDLLAMA.name, WORDLLAMA.dimensions)
                for key, server in servers.items():
                    totals[key][2] = server.cpu_seconds() - began[key]
            finally:
                for server in servers.values():
                    server.stop()
    return {
        key: {"entries": int(n), "entries_per_s": n / elapsed, "cpu_ms_per_entry": cpu * 1000 / n}
        for key, (n, elapsed, cpu) in totals.items()
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ingest", description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="Seconds per measurement (10).")
    parser.add_argument("--batch", type=int, default=500, help="Entries per batch request (500).")
    parser.add_argument("--databases", default="sqlite,oceanbase", help="Comma-separated backends.")
    parser.add_argument("--embedding-leg", action="store_true", help="Batches with the leg off and on.")
    args = parser.parse_args(argv)
    if args.embedding_leg:
        return _leg_main(args.databases.split(","), args.batch, args.seconds)
    results: dict[str, Any] = {"batch": args.batch, "seconds": args.seconds}
    with tempfile.TemporaryDirectory(prefix="pc-ingest-") as scratch:
        for name in args.databases.split(","):
            results[name] = measure(name, args.batch, args.seconds, Path(scratch) / name)
    print(
        f"{'database':<10} {'one per request':>18} {f'batches of {args.batch}':>18} {'CPU ms/entry':>14}"
        f" {'batches, no duplicate check':>30}"
    )
    for name in args.databases.split(","):
        single, batch, unchecked = (results[name][key] for key in ("single", "batch", "batch_unchecked"))
        print(
            f"{name:<10} {single['entries_per_s']:>14,.0f} /s {batch['entries_per_s']:>14,.0f} /s "
            f"{single['cpu_ms_per_entry']:>6.2f} → {batch['cpu_ms_per_entry']:.2f}"
            f" {unchecked['entries_per_s']:>16,.0f} /s, {unchecked['cpu_ms_per_entry']:.3f} ms/entry"
        )
    RESULTS.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


def _leg_main(names: Sequence[str], batch: int, seconds: float) -> int:
    print(f"{'database':<10} {'leg':<4} {f'batches of {batch}':>18} {'CPU ms/entry':>13}")
    with tempfile.TemporaryDirectory(prefix="pc-ingest-leg-") as scratch:
        for name in names:
            for key, figures in measure_leg(name, batch, seconds, Path(scratch) / name).items():
                print(
                    f"{name:<10} {key:<4} {figures['entries_per_s']:>14,.0f} /s"
                    f" {figures['cpu_ms_per_entry']:>13.3f}"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
