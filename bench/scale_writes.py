"""What a write costs the next prepare in a process whose mirror holds a large Scope.

In process, on a copy of a kept scale database (`python -m bench.scale --keep DIR` leaves one):
open the Runtime, warm the Scope with a few prepares, then alternate one remember and one prepare
`--writes` times, and print each prepare's time after a write and the process's RSS (VmRSS)
before the writes and after them. To compare two commits, run it with each commit's code first on
PYTHONPATH, alternating, each on a fresh copy of the same database.

    python -m bench.scale_writes /path/to/ingest.sqlite3 [--writes 20] [--warm 64]

`--mirror N` times the search mirror alone instead, on N synthetic documents with keys 1..N
after a first read: replaying a write of one document (the first, whose key lookups once built a
map of every key, and the next 20) with the first one's peak allocation, and reading a one-posting
term after each write (which once rebuilt the whole key table).

    python -m bench.scale_writes --mirror 1000000
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

import numpy as np

from powercontext_api.models import PrepareContextRequest, RememberRequest
from powercontext_runtime.search._log import LoggedWrite
from powercontext_runtime.search._mirror import FamilyMirror

from .datagen import memory_text, queries
from .run import open_app
from .scale import SCOPE

MIB = 2**20


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024 / MIB
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


def _mirror_of(keys: np.ndarray) -> FamilyMirror:
    mirror = FamilyMirror(1, np.stack([keys, np.full(len(keys), 9)], axis=1))
    rare = keys[:: max(1, len(keys) // 1000)]
    mirror.install("heron", mirror.postings_of(rare, np.ones(len(rare), np.int64)))  # a first read
    return mirror


def _one_document(key: int) -> LoggedWrite:
    return LoggedWrite(
        doc_keys=np.array([key], np.int64),
        lengths=np.array([5], np.int32),
        terms=["heron"],
        bounds=np.array([0, 1], np.int64),
        positions=np.array([0], np.int64),
        tfs=np.array([1], np.int32),
    )


def _ms(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def measure_mirror(count: int, writes: int) -> None:
    keys = np.arange(1, count + 1, dtype=np.int64)
    mirror = _mirror_of(keys)
    replays, reads = [], []
    for i in range(writes + 1):
        key = count + 1 + i
        replays.append(_ms(partial(mirror.replay, [(i + 2, key, _one_document(key))])))
        reads.append(_ms(partial(mirror.postings_of, keys[5:6], np.ones(1, np.int64))))
    mirror = _mirror_of(keys)
    tracemalloc.start()
    mirror.replay([(2, count + 1, _one_document(count + 1))])
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print(
        f"replay of a one-document write: first {replays[0]:.1f} ms (peak {peak / MIB:.2f} MiB),"
        f" next {writes} p50 {statistics.median(replays[1:]):.3f} ms"
    )
    print(
        f"read of a one-posting term after each write: first {reads[0]:.2f} ms,"
        f" next {writes} p50 {statistics.median(reads[1:]):.3f} ms"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "database", type=Path, nargs="?", help="a kept SQLite database; it is copied, never written"
    )
    parser.add_argument("--mirror", type=int, help="time a synthetic mirror of this many documents instead")
    parser.add_argument("--writes", type=int, default=20)
    parser.add_argument(
        "--warm", type=int, default=64, help="prepares before the writes, cycling the 32 queries"
    )
    args = parser.parse_args(argv)
    if args.mirror:
        measure_mirror(args.mirror, args.writes)
        return 0
    if args.database is None:
        parser.error("a database, or --mirror N")
    with tempfile.TemporaryDirectory(dir=args.database.parent) as scratch:
        copy = Path(scratch) / args.database.name
        shutil.copyfile(args.database, copy)
        measure(copy, args.writes, args.warm)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
