"""The hybrid leg of the evaluation: the bundled WordLlama model on loopback
(`devtools.embedding_server`), the server's settings that point at it, and a wait until the
background embedder has given every seeded entry its vector (read from the evaluation's own
database, which nothing else uses)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from devtools.embedding_server import DIMENSIONS, MODEL, EmbeddingServer, wordllama_embed
from powercontext_runtime import backend_for

# Configurations the hybrid leg runs (the leg changes Memory recall only); each is reported
# under its key with this suffix.
HYBRID_CONFIGS = ("memory-8",)
SUFFIX = "+hybrid"
QUERY_TIMEOUT_MS = 10_000


@contextmanager
def model_env(fusion_k: int | None = None, weight: float | None = None) -> Iterator[dict[str, str]]:
    """The embedding settings of a server that uses the model, while it runs."""
    with EmbeddingServer(wordllama_embed()) as model:
        env = {
            "POWERCONTEXT_SERVER_EMBEDDING_URL": model.url,
            "POWERCONTEXT_SERVER_EMBEDDING_MODEL": MODEL,
            "POWERCONTEXT_SERVER_EMBEDDING_DIMENSIONS": str(DIMENSIONS),
            # Recall is measured, not the deadline: a busy machine must not turn a question lexical.
            "POWERCONTEXT_SERVER_EMBEDDING_TIMEOUT_MS": str(QUERY_TIMEOUT_MS),
        }
        if fusion_k is not None:
            env["POWERCONTEXT_SERVER_EMBEDDING_FUSION_K"] = str(fusion_k)
        if weight is not None:
            env["POWERCONTEXT_SERVER_EMBEDDING_WEIGHT"] = str(weight)
        yield env


def wait_embedded(database_url: str, timeout_s: float = 600) -> int:
    """Block until no head version lacks its vector of the model; the vectors stored."""
    deadline = time.monotonic() + timeout_s
    while True:
        missing, stored = _counts(database_url)
        if not missing:
            return stored
        if time.monotonic() > deadline:
            raise RuntimeError(f"{missing} entries still without a vector after {timeout_s} s")
        time.sleep(0.2)


def _counts(database_url: str) -> tuple[int, int]:
    backend = backend_for(database_url)
    conn = backend.connect()
    try:
        backend.begin(conn, False)
        missing = conn.execute(
            "SELECT COUNT(*) FROM memory_entry_versions v LEFT JOIN memory_vectors m"
            " ON m.version_key = v.version_key AND m.model = ? AND m.dims = ?"
            " WHERE v.removed_revision IS NULL AND m.version_key IS NULL",
            (MODEL, DIMENSIONS),
        ).fetchone()[0]
        stored = conn.execute("SELECT COUNT(*) FROM memory_vectors").fetchone()[0]
        backend.commit(conn)
    finally:
        backend.close(conn)
        backend.stop()
    return int(missing), int(stored)


def fallbacks(metrics: str) -> int:
    """Searches that answered lexically, from the server's /metrics text (0 in a valid run)."""
    return sum(
        int(float(line.rsplit(" ", 1)[1]))
        for line in metrics.splitlines()
        if line.startswith("powercontext_embedding_fallbacks_total{")
    )
