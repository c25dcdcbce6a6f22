"""What a write costs the next prepare in a process whose mirror holds a large Scope.

In process, on a copy of a kept scale database (`python -m bench.scale --keep DIR` leaves one):
open the Runtime, warm the Scope with a few prepares, then alternate one remember and one prepare
`--writes` times, and print each prepare's time after a write and the process's RSS (VmRSS)
before the writes and after them. To compare two commits, run it with each commit's code first on
PYTHONPATH, alternating, each on a fresh copy of the same database.

    python -m bench.scale_writes /path/to/ingest.sqlite3 [--writes 20] [--warm 64]
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from powercontext_api.models import PrepareContextRequest, RememberRequest

from .datagen import memory_text, queries
from .run import open_app
from .scale import SCOPE


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def measure(database: Path, writes: int, warm: int) -> None:
    app, store = open_app(f"sqlite:///{database}")
    asked = queries()
    rng = random.Random(34)
    try:

        def prepare(query: str) -> float:
            started = time.perf_counter()
            app.prepare_context(PrepareContextRequest(scope_id=SCOPE, query=query))
            return (time.perf_counter() - started) * 1000

        first = prepare(asked[0])
        warmed = [prepare(asked[i % len(asked)]) for i in range(1, warm + 1)]
        before = rss_mib()
        after_write = []
        remembers = []
        for i in range(writes):
            started = time.perf_counter()
            app.remember(RememberRequest(scope_id=SCOPE, text=f"{memory_text(rng)} (write {i})"))
            remembers.append((time.perf_counter() - started) * 1000)
            after_write.append(prepare(asked[i % len(asked)]))
        after = rss_mib()
    finally:
        store.close()
    settled = warmed[-len(asked) :]  # the last pass: every query seen before
    print(f"first prepare {first:.0f} ms; warm prepares p50 {statistics.median(settled):.1f} ms")
    print("prepare after each write, ms:", " ".join(f"{t:.1f}" for t in after_write))
    print(
        f"after a write: first {after_write[0]:.1f} ms, p50 {statistics.median(after_write):.1f} ms,"
        f" max {max(after_write):.1f} ms; remember p50 {statistics.median(remembers):.1f} ms"
    )
    print(f"RSS before the writes {before:.0f} MiB, after {after:.0f} MiB")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("database", type=Path, help="a kept SQLite database; it is copied, never written")
    parser.add_argument("--writes", type=int, default=20)
    parser.add_argument(
        "--warm", type=int, default=64, help="prepares before the writes, cycling the 32 queries"
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(dir=args.database.parent) as scratch:
        copy = Path(scratch) / args.database.name
        shutil.copyfile(args.database, copy)
        measure(copy, args.writes, args.warm)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
