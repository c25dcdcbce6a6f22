"""Round trips per write on OceanBase: statements a remember, a 100-entry batch and a revise send.

Opens the store in this process on a fresh seekdb database (or `--url`), counts every statement
pymysql sends to the server (each is a round trip: queries, BEGIN, COMMIT), on the request's
thread and on the store's own threads (the index merger) apart, and prints the mean per write.

    python -m bench.round_trips [--singles 200] [--batches 20] [--batch 100] [--url mysql+pymysql://...]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from devtools.seekdb import SeekdbServer

from .datagen import memory_text

# Statements sent, by thread name: the request's thread, or the store's own threads.
_Counts = Counter[str]


@contextmanager
def counting(counts: _Counts) -> Iterator[None]:
    """Count every command pymysql sends (each waits for the server's answer), by sending thread."""
    import pymysql.connections

    real = pymysql.connections.Connection._execute_command

    def counted(self: Any, command: int, sql: Any) -> Any:
        counts[threading.current_thread().name] += 1
        return real(self, command, sql)

    pymysql.connections.Connection._execute_command = counted  # type: ignore[method-assign]
    try:
        yield
    finally:
        pymysql.connections.Connection._execute_command = real  # type: ignore[method-assign]


@contextmanager
def database(url: str | None) -> Iterator[str]:
    if url is not None:
        yield url
        return
    with tempfile.TemporaryDirectory(prefix="pc-round-trips-") as scratch:
        seekdb = SeekdbServer(Path(scratch))
        try:
            yield seekdb.new_database_url()
        finally:
            seekdb.stop()


def per_write(
    counts: _Counts, writes: int, run: Callable[[], None], settle: Callable[[], None]
) -> tuple[float, float]:
    """Statements per write on the calling thread and on the store's threads, over `writes` writes."""
    counts.clear()
    run()
    settle()
    own = counts[threading.current_thread().name]
    return own / writes, (sum(counts.values()) - own) / writes


def measure(url: str, singles: int, batches: int, batch: int) -> dict[str, tuple[float, float]]:
    from powercontext_runtime.bootstrap import open_store
    from powercontext_runtime.models import Scope
    from powercontext_runtime.store import memory, scopes

    rng = random.Random(7)
    texts = iter(f"{memory_text(rng)} ({n})" for n in range(10**9))
    store = open_store(url)
    counts: _Counts = Counter()

    def settle() -> None:
        time.sleep(1.0)  # the merger's coalescing wait, then its check

    def fresh_scope() -> str:
        scope_id = f"bench:round-trips-{uuid.uuid4().hex[:12]}"
        store.run(scopes.create_scope, Scope(scope_id, "", "", (), 1))
        return scope_id

    results: dict[str, tuple[float, float]] = {}
    try:
        with counting(counts):
            scope_id = fresh_scope()
            store.run(memory.remember, scope_id, next(texts), "fact", None, None, True)  # warm up

            cited = []

            def remember_singles() -> None:
                for _ in range(singles):
                    entry = store.run(memory.remember, scope_id, next(texts), "fact", None, None, True)
                    cited.append(entry.citation)

            results["single remember"] = per_write(counts, singles, remember_singles, settle)

            def revise() -> None:
                for citation in cited:
                    store.run(memory.revise_memory_entry, scope_id, citation, next(texts))

            results["revise"] = per_write(counts, len(cited), revise, settle)
            scope_id = fresh_scope()

            def remember_batches() -> None:
                for _ in range(batches):
                    entries = [(next(texts), "fact", None) for _ in range(batch)]
                    store.run(memory.remember_batch, scope_id, entries, None, True)

            results[f"batch of {batch}"] = per_write(counts, batches, remember_batches, settle)
    finally:
        store.close()
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.round_trips", description=__doc__.splitlines()[0])
    parser.add_argument("--singles", type=int, default=200, help="Single remembers measured (200).")
    parser.add_argument("--batches", type=int, default=20, help="Batches measured (20).")
    parser.add_argument("--batch", type=int, default=100, help="Entries per batch (100).")
    parser.add_argument("--url", help="An OceanBase database URL (default: a fresh seekdb's).")
    args = parser.parse_args(argv)
    with database(args.url) as url:
        results = measure(url, args.singles, args.batches, args.batch)
    print(f"{'write':<18} {'statements/write':>17} {'merger thread/write':>20}")
    for label, (own, background) in results.items():
        print(f"{label:<18} {own:>17.2f} {background:>20.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
