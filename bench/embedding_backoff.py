"""`python -m bench.embedding_backoff`: what a slow embedding endpoint costs searches, with the
back-off and without it.

One Scope of a few entries (SQLite, in process), the leg on through the server's own embedding
client, and an endpoint on loopback (`devtools.embedding_server`) that answers every call after
`--slow-ms` (past the query deadline, `--deadline-ms`, the server's default 150 ms). The same
`--searches` searches run one after the other, twice: with no back-off (period 0: every search asks
the endpoint and waits out its deadline, as before the back-off) and with the server's default
(1 s doubling to 30 s). Prints the wall time of each run, its first, p50 and slowest search, the query calls
the endpoint received and the fallbacks by reason.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from devtools.embedding_server import DIMENSIONS, MODEL, EmbeddingServer
from powercontext_api.models import MemorySearchRequest, RememberBatchRequest, ScopeCreateRequest
from powercontext_runtime import Settings, open_application
from powercontext_runtime.vectors.backoff import BackoffPolicy
from powercontext_server.embedding_client import EmbeddingClient, embedding_leg
from powercontext_server.settings import EmbeddingSettings

SCOPE = "bench:backoff"
NO_BACKOFF = BackoffPolicy(first_s=0.0, cap_s=0.0)


def run(url: str, endpoint: str, policy: BackoffPolicy, searches: int, deadline_ms: int) -> dict[str, Any]:
    settings = EmbeddingSettings(endpoint, MODEL, DIMENSIONS, timeout_ms=deadline_ms)
    reasons: Counter[str] = Counter()
    client = EmbeddingClient(settings)
    leg = embedding_leg(settings, client, lambda reason: reasons.update([reason]))
    app = open_application(Settings(database_url=url))
    app.use_embeddings(dataclasses.replace(leg, backoff=policy))
    request = MemorySearchRequest.model_validate({"scope_id": SCOPE, "query": "the parked car"})
    taken = []
    began = time.perf_counter()
    for _ in range(searches):
        started = time.perf_counter()
        app.search_memory(request)
        taken.append(time.perf_counter() - started)
    wall = time.perf_counter() - began
    app.close()
    client.close()
    return {
        "wall": wall,
        "first": taken[0],
        "p50": statistics.median(taken),
        "max": max(taken),
        "reasons": dict(reasons),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--searches", type=int, default=40)
    parser.add_argument("--slow-ms", type=int, default=400)
    parser.add_argument("--deadline-ms", type=int, default=150)
    args = parser.parse_args(argv)
    calls: list[int] = []

    def slow(texts: Sequence[str]) -> Any:
        calls.append(len(texts))
        time.sleep(args.slow_ms / 1000)
        return np.ones((len(texts), DIMENSIONS), dtype=np.float32)

    with tempfile.TemporaryDirectory() as scratch, EmbeddingServer(slow) as endpoint:
        url = f"sqlite:///{Path(scratch) / 'bench.sqlite3'}"
        loader = open_application(Settings(database_url=url))
        loader.create_scope(ScopeCreateRequest.model_validate({"scope_id": SCOPE}))
        entries = [{"text": f"note {i}: the car was parked by the river"} for i in range(20)]
        loader.remember_batch(RememberBatchRequest.model_validate({"scope_id": SCOPE, "entries": entries}))
        loader.close()
        print(
            f"{args.searches} searches in a row, endpoint answering after {args.slow_ms} ms,"
            f" deadline {args.deadline_ms} ms"
        )
        for name, policy in (("no back-off (before)", NO_BACKOFF), ("back-off (after)", BackoffPolicy())):
            calls.clear()
            found = run(url, endpoint.url, policy, args.searches, args.deadline_ms)
            print(
                f"{name}: wall {found['wall']:.3f} s, first {found['first'] * 1000:.1f} ms,"
                f" p50 {found['p50'] * 1000:.1f} ms,"
                f" slowest {found['max'] * 1000:.1f} ms, query calls to the endpoint {calls.count(1)},"
                f" fallbacks {found['reasons']}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
