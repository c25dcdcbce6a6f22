"""`python -m bench.embedding_leg`: what the embedding leg adds to a prepare besides the query's
embedding call, at 10k Memory entries in one Scope (SQLite, in process; `--database oceanbase`:
the bundled seekdb).

The same database is prepared against twice, the same queries in the same order: once lexical,
once with the leg on behind an embedding function that hands back each query's vector computed
beforehand (the call itself costs nothing here, so the difference is the leg: the Scope's vector
stamp, the cosine over 10k vectors, the fusion). Vectors are the default bundled model's
(all-MiniLM-L6-v2, 384 dimensions; `--model` picks another of `devtools.embedding_models`;
`--widen 2` repeats each vector twice, 768 dimensions, as long as all-mpnet-base-v2's: the leg's
cost depends on how many vectors there are and how long, not on their values), computed once per
model and corpus (some minutes for 10k entries here) and kept in `bench/.cache/`, then stored by
the background embedder before timing. The two applications, lexical and with the leg, are open on
the database together and take turns a round at a time, so both see the same load. Prints the
best, p50 and p95 of both and the differences.

Then, as in an agent's loop, `--writes` times: one entry remembered, its vector stored, and one
prepare by each application: the leg's cost right after a write, when the Scope's held vectors
gain a row.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from devtools.embedding_models import DEFAULT, MODELS, Model
from powercontext_api.models import PrepareContextRequest, RememberBatchRequest, ScopeCreateRequest
from powercontext_runtime import EmbeddingLeg, Settings, one_blas_thread, open_application

from .datagen import memory_text, queries
from .embedded import wait_embedded
from .ingest import database
from .run import CACHE
from .stats import percentile

SCOPE = "bench:embedding"


def in_ms(samples: Sequence[float], q: float) -> float:
    """The q-th percentile of `samples` (seconds) in milliseconds."""
    return percentile([s * 1000 for s in samples], q)


def timed_round(app: Any, asked: Sequence[str]) -> list[float]:
    """Seconds per prepare of one round over `asked`."""
    samples = []
    for query in asked:
        request = PrepareContextRequest.model_validate({"scope_id": SCOPE, "query": query, "assembly": {}})
        started = time.perf_counter()
        app.prepare_context(request)
        samples.append(time.perf_counter() - started)
    return samples


def cached_vectors(model: Model, texts: Sequence[str]) -> npt.NDArray[np.float32]:
    """The model's vectors of `texts`, kept in `bench/.cache/` under a hash of the model's name and
    the texts: the default model takes minutes for 10k entries on this machine, and they are the
    same every run."""
    digest = hashlib.sha256("\n".join([model.name, *texts]).encode()).hexdigest()[:16]
    path = CACHE / f"vectors-{model.name}-{len(texts)}-{digest}.npy"
    if path.exists():
        return np.load(path)
    found = np.asarray(model.load()(texts), dtype=np.float32)
    CACHE.mkdir(exist_ok=True)
    partial = path.with_suffix(".partial.npy")
    np.save(partial, found)
    partial.replace(path)
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--model", choices=sorted(MODELS), default=DEFAULT.name)
    parser.add_argument("--widen", type=int, default=1, help="each vector repeated this many times")
    parser.add_argument(
        "--writes", type=int, default=32, help="prepares right after a write (at most one per query)"
    )
    parser.add_argument("--database", choices=["sqlite", "oceanbase"], default="sqlite")
    args = parser.parse_args(argv)
    model = MODELS[args.model]
    rng = random.Random(7)
    texts = [memory_text(rng) for _ in range(args.entries)]
    asked = queries()[:200]
    embedded = np.tile(cached_vectors(model, [*texts, *asked]), args.widen)
    vectors = dict(zip([*texts, *asked], embedded, strict=True))
    name, dimensions = (
        (model.name, model.dimensions)
        if args.widen == 1
        else (f"{model.name}-x{args.widen}", model.dimensions * args.widen)
    )

    def precomputed(texts: Sequence[str], timeout_s: float) -> Any:
        return np.stack([vectors[text] for text in texts])

    with (
        tempfile.TemporaryDirectory(prefix="pc-bench-embed-") as scratch,
        database(args.database, Path(scratch)) as url,
    ):
        lexical_app = open_application(Settings(database_url=url))
        lexical_app.create_scope(ScopeCreateRequest.model_validate({"scope_id": SCOPE}))
        for start in range(0, args.entries, 500):
            entries = [{"text": text} for text in texts[start : start + 500]]
            lexical_app.remember_batch(
                RememberBatchRequest.model_validate({"scope_id": SCOPE, "entries": entries})
            )
        hybrid_app = open_application(Settings(database_url=url))
        leg = EmbeddingLeg(precomputed, name, dimensions, query_timeout_s=1.0, batch_size=32)
        one_blas_thread()  # as the server does when it turns the leg on
        hybrid_app.use_embeddings(leg)
        wait_embedded(url, name, dimensions)
        lexical: list[float] = []
        hybrid: list[float] = []
        for round_number in range(args.rounds + 1):  # the first round of each only warms caches
            for app, samples in ((lexical_app, lexical), (hybrid_app, hybrid)):
                taken = timed_round(app, asked)
                samples.extend(taken if round_number else [])
        after_write = after_writes(lexical_app, hybrid_app, asked[: args.writes], url, name, dimensions)
        lexical_app.close()
        hybrid_app.close()
    p50 = in_ms(lexical, 50), in_ms(hybrid, 50)
    print(
        f"{args.database}, entries {args.entries}, {name} ({dimensions} dimensions), prepares {len(lexical)}"
        f" each ({args.rounds} rounds of {len(asked)} queries, taking turns)"
    )
    # The best of each is what a prepare costs when nothing else wants the CPU (a shared machine's
    # p50 carries its neighbours' load).
    print(f"lexical: best {min(lexical) * 1000:.3f} ms, p50 {p50[0]:.3f} ms, p95 {in_ms(lexical, 95):.3f} ms")
    print(
        f"with the leg (embedding call free): best {min(hybrid) * 1000:.3f} ms, p50 {p50[1]:.3f} ms,"
        f" p95 {in_ms(hybrid, 95):.3f} ms"
    )
    print(
        f"the leg adds: best {1000 * (min(hybrid) - min(lexical)):.3f} ms, p50 {p50[1] - p50[0]:.3f} ms; mean {1000 * (statistics.fmean(hybrid) - statistics.fmean(lexical)):.3f} ms"
    )
    written, written_with_leg = after_write
    if written:
        p50_after = in_ms(written, 50), in_ms(written_with_leg, 50)
        print(
            f"right after a write ({len(written)} each): lexical p50 {p50_after[0]:.3f} ms,"
            f" with the leg p50 {p50_after[1]:.3f} ms; the leg adds p50 {p50_after[1] - p50_after[0]:.3f} ms,"
            f" mean {1000 * (statistics.fmean(written_with_leg) - statistics.fmean(written)):.3f} ms"
        )
    return 0


def after_writes(
    lexical_app: Any, hybrid_app: Any, texts: Sequence[str], url: str, name: str, dimensions: int
) -> tuple[list[float], list[float]]:
    """Seconds of one prepare by each application after each text is remembered and its vector
    stored (the texts are queries, whose vectors are at hand)."""
    lexical: list[float] = []
    hybrid: list[float] = []
    for text in texts:  # remembered where the embedder runs, which a write nudges
        hybrid_app.remember_batch(
            RememberBatchRequest.model_validate({"scope_id": SCOPE, "entries": [{"text": text}]})
        )
        wait_embedded(url, name, dimensions)
        lexical.extend(timed_round(lexical_app, [text]))
        hybrid.extend(timed_round(hybrid_app, [text]))
    return lexical, hybrid


if __name__ == "__main__":
    raise SystemExit(main())
