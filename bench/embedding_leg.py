"""`python -m bench.embedding_leg`: what the embedding leg adds to a prepare besides the query's
embedding call, at 10k Memory entries in one Scope (SQLite, in process).

The same database is prepared against twice, the same queries in the same order: once lexical,
once with the leg on behind an embedding function that hands back each query's vector computed
beforehand (the call itself costs nothing here, so the difference is the leg: the Scope's vector
stamp, the cosine over 10k vectors, the fusion). Vectors are the default bundled model's
(all-MiniLM-L6-v2, 384 dimensions; `--model` picks another of `devtools.embedding_models`),
filled in by the background embedder before timing (a minute or two for 10k entries here). The
two applications, lexical and with the leg, are open on the database together and take turns a
round at a time, so both see the same load. Prints the best, p50 and p95 of both and the
differences.
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

from devtools.embedding_models import DEFAULT, MODELS
from powercontext_api.models import PrepareContextRequest, RememberBatchRequest, ScopeCreateRequest
from powercontext_runtime import EmbeddingLeg, Settings, one_blas_thread, open_application

from .datagen import memory_text, queries
from .embedded import wait_embedded

SCOPE = "bench:embedding"


def percentile(samples: Sequence[float], share: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))] * 1000


def timed_round(app: Any, asked: Sequence[str]) -> list[float]:
    """Seconds per prepare of one round over `asked`."""
    samples = []
    for query in asked:
        request = PrepareContextRequest.model_validate({"scope_id": SCOPE, "query": query, "assembly": {}})
        started = time.perf_counter()
        app.prepare_context(request)
        samples.append(time.perf_counter() - started)
    return samples


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--model", choices=sorted(MODELS), default=DEFAULT.name)
    args = parser.parse_args(argv)
    model = MODELS[args.model]
    embed = model.load()
    rng = random.Random(7)
    asked = queries()[:200]
    vectors = {q: np.asarray(v, dtype=np.float32) for q, v in zip(asked, embed(asked), strict=True)}

    def precomputed(texts: Sequence[str], timeout_s: float) -> Any:
        return np.stack([vectors[t] for t in texts]) if all(t in vectors for t in texts) else embed(texts)

    with tempfile.TemporaryDirectory(prefix="pc-bench-embed-") as scratch:
        url = f"sqlite:///{Path(scratch) / 'bench.sqlite3'}"
        lexical_app = open_application(Settings(database_url=url))
        lexical_app.create_scope(ScopeCreateRequest.model_validate({"scope_id": SCOPE}))
        for start in range(0, args.entries, 500):
            entries = [{"text": memory_text(rng)} for _ in range(min(500, args.entries - start))]
            lexical_app.remember_batch(
                RememberBatchRequest.model_validate({"scope_id": SCOPE, "entries": entries})
            )
        hybrid_app = open_application(Settings(database_url=url))
        leg = EmbeddingLeg(precomputed, model.name, model.dimensions, query_timeout_s=1.0, batch_size=32)
        one_blas_thread()  # as the server does when it turns the leg on
        hybrid_app.use_embeddings(leg)
        wait_embedded(url, model.name, model.dimensions)
        lexical: list[float] = []
        hybrid: list[float] = []
        for round_number in range(args.rounds + 1):  # the first round of each only warms caches
            for app, samples in ((lexical_app, lexical), (hybrid_app, hybrid)):
                taken = timed_round(app, asked)
                samples.extend(taken if round_number else [])
        lexical_app.close()
        hybrid_app.close()
    p50 = percentile(lexical, 0.5), percentile(hybrid, 0.5)
    print(
        f"entries {args.entries}, {model.name} ({model.dimensions} dimensions), prepares {len(lexical)}"
        f" each ({args.rounds} rounds of {len(asked)} queries, taking turns)"
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


if __name__ == "__main__":
    raise SystemExit(main())
