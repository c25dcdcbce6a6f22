"""SQLite's `-wal` file over time under 8 preparing and 8 remembering clients, and after shutdown.

Starts `powercontext serve` on a fresh SQLite database (`--code DIR` serves another checkout, to
compare before and after), seeds a Scope, runs the mixed load of `devtools/mixed_load.py` for
`--seconds`, sampling the size of the `-wal` file every second, then stops the server (SIGTERM)
and records what is left of the file.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from devtools import mixed_load
from devtools.server_process import Client

from .merge_stress import REPO, CodeServer

RESULTS = Path(__file__).resolve().parent / "results" / "wal_growth.json"


def wal_bytes(db: Path) -> int:
    wal = Path(f"{db}-wal")
    return wal.stat().st_size if wal.exists() else 0


def measure(seconds: float, clients: int, scratch: Path) -> dict[str, Any]:
    db = scratch / "wal.sqlite3"
    server = CodeServer(f"sqlite:///{db}", scratch / "server.log")
    try:
        client = Client(server.port)
        status, _ = client.post("/v1/scopes", json.dumps({"scope_id": "bench:wal"}).encode())
        client.close()
        assert status == 201, status
        mixed_load.seed(server.port, "bench:wal", 200)
        load = mixed_load.run(server.port, "bench:wal", seconds, clients, lambda: wal_bytes(db), interval=1.0)
    finally:
        server.stop()
    return {
        "remembers": load.acknowledged,
        "prepares": load.prepared,
        "failures": len(load.failures),
        "wal_mib": [(round(t, 1), round(size / 2**20, 1)) for t, size in load.samples],
        "database_mib": round(db.stat().st_size / 2**20, 1),
        "wal_after_shutdown_mib": round(wal_bytes(db) / 2**20, 1),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.wal_growth", description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="Seconds of load (60).")
    parser.add_argument("--clients", type=int, default=8, help="Clients of each kind (8).")
    parser.add_argument("--code", default=str(REPO), help="Checkout whose server runs (this one).")
    parser.add_argument("--label", default="after", help="Key of this run in the results file (after).")
    args = parser.parse_args(argv)
    CodeServer.code = Path(args.code).resolve()
    results: dict[str, Any] = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    with tempfile.TemporaryDirectory(prefix="pc-wal-") as scratch:
        results[args.label] = {"code": args.code, **measure(args.seconds, args.clients, Path(scratch))}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    for label, run in results.items():
        every = [f"{t:.0f}s {mib:.0f}" for t, mib in run["wal_mib"][::5]]
        print(
            f"{label:<7} -wal MiB: {', '.join(every)}; max {max(m for _, m in run['wal_mib']):.0f},"
            f" after shutdown {run['wal_after_shutdown_mib']:.0f} (database {run['database_mib']:.0f} MiB,"
            f" {run['remembers']} remembers, {run['prepares']} prepares, {run['failures']} failures)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
