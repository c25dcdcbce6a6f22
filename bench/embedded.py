"""Wait until the background embedder has caught up: no document of any family (Memory's head
versions, Experience's and Topic Memory's head revisions) lacks its vector of the model. The
benchmarks and the evaluation measure recall and cost with every vector in place; they read the
database on a connection of their own (`vectors_pending`), from any process.
"""

from __future__ import annotations

import time

from powercontext_runtime import vectors_pending


def wait_embedded(database_url: str, model: str, dims: int, timeout_s: float = 3600) -> None:
    """Return once every document has its vector; RuntimeError after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while vectors_pending(database_url, model, dims):
        if time.monotonic() > deadline:
            raise RuntimeError(f"documents still without a vector of {model} after {timeout_s} s")
        time.sleep(0.2)
