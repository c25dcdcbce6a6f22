"""`python -m bench.embedding_leg`: what the embedding leg adds to a prepare besides the query's
embedding call, at 10k Memory entries in one Scope (SQLite, in process).

The same database is prepared against twice, the same queries in the same order: once lexical,
once with the leg on behind an embedding function that hands back each query's vector computed
beforehand (the call itself costs nothing here, so the difference is the leg: the Scope's vector
stamp, the cosine over 10k vectors, the fusion). Vectors are WordLlama's (256 dimensions, from
`devtools.embedding_models`), filled in by the background embedder before timing: the default
model, all-MiniLM-L6-v2, would take minutes to embed 10k entries here. Prints the best, p50 and
p95 of both and the differences.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from devtools.embedding_models import WORDLLAMA
from powercontext_api.models import PrepareContextRequest, RememberBatchRequest, ScopeCreateRequest
from powercontext_runtime import EmbeddingLeg, Settings, backend_for, open_application

from .datagen import memory_text, queries

SCOPE = "bench:embedding"


def percentile(samples: Sequence[float], share: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))] * 1000


def timed(app: Any, asked: Sequence[str], rounds: int) -> list[float]:
    """Prepare latencies of `rounds` rounds over `asked`, after one untimed round (warm caches)."""
    samples = []
    for round_number in range(rounds + 1):
        for query in asked:
            request = PrepareContextRequest.model_validate(
                {"scope_id": SCOPE, "query": query, "assembly": {}}
            )
            started = time.perf_counter()
            app.prepare_context(request)
            if round_number:
                samples.append(time.perf_counter() - started)
    return samples


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    embed = WORDLLAMA.load()
    rng = random.Random(7)
    asked = queries()[:200]
    vectors = {q: np.asarray(v, dtype=np.float32) for q, v in zip(asked, embed(asked), strict=True)}
    with tempfile.TemporaryDirectory(prefix="pc-bench-embed-") as scratch:
        url = f"sqlite:///{Path(scratch) / 'bench.sqlite3'}"
        app = open_application(Settings(database_url=url))
        app.create_scope(ScopeCreateRequest.model_validate({"scope_id": SCOPE}))
        for start in range(0, args.entries, 500):
            entries = [{"text": memory_text(rng)} for _ in range(min(500, args.entries - start))]
            app.remember_batch(RememberBatchRequest.model_validate({"scope_id": SCOPE, "entries": entries}))
        lexical = timed(app, asked, args.rounds)
        app.close()

        def precomputed(texts: Sequence[str], timeout_s: float) -> Any:
            return np.stack([vectors[t] if t in vectors else embed([t])[0] for t in texts])

        app = open_application(Settings(database_url=url))
        app.use_embeddings(
            EmbeddingLeg(
                precomputed, WORDLLAMA.name, WORDLLAMA.dimensions, query_timeout_s=1.0, batch_size=512
            )
        )
        _wait_embedded(url, args.entries)
        hybrid = timed(app, asked, args.rounds)
        app.close()
    p50 = percentile(lexical, 0.5), percentile(hybrid, 0.5)
    print(
        f"entries {args.entries}, prepares {len(lexical)} each ({args.rounds} rounds of {len(asked)} queries)"
    )
    # The best of each is what a prepare costs when nothing else wants the CPU (a shared machine's
    # p50 carries its neighbours' load).
    print(
        f"lexical: best {min(lexical) * 1000:.3f} ms, p50 {p50[0]:.3f} ms, p95 {percentile(lexical, 0.95):.3f} ms"
    )
    print(
        f"with the leg (embedding call free): best {min(hybrid) * 1000:.3f} ms, p50 {p50[1]:.3f} ms,"
        f" p95 {percentile(hybrid, 0.95):.3f} ms"
    )
    print(
        f"the leg adds: best {1000 * (min(hybrid) - min(lexical)):.3f} ms, p50 {p50[1] - p50[0]:.3f} ms; mean {1000 * (statistics.fmean(hybrid) - statistics.fmean(lexical)):.3f} ms"
    )
    return 0


def _wait_embedded(url: str, entries: int) -> None:
    """Until the background embedder has stored a vector per entry (read from the database)."""
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        backend = backend_for(url)
        conn = backend.connect()
        try:
            stored = conn.execute("SELECT COUNT(*) FROM memory_vectors").fetchone()[0]
        finally:
            backend.close(conn)
            backend.stop()
        if stored >= entries:
            return
        time.sleep(0.2)
    raise RuntimeError("the embedder did not finish")


if __name__ == "__main__":
    raise SystemExit(main())
