"""Wait until the background embedder has caught up: no document of any family (Memory's head
versions, Experience's and Topic Memory's head revisions) lacks its vector of the model. The
benchmarks and the evaluation measure recall and cost with every vector in place.

It asks the embedder's own queues (`VECTOR_SOURCES`), so it waits for exactly what the embedder
will embed; it reads the database on a connection of its own, from any process.
"""

from __future__ import annotations

import time

from powercontext_runtime import backend_for
from powercontext_runtime.store.sql_store import VECTOR_SOURCES


def unembedded(database_url: str, model: str, dims: int) -> bool:
    """Whether some document of some family still waits for its vector of `model` at `dims`."""
    backend = backend_for(database_url)
    conn = backend.connect()
    try:
        backend.begin(conn, False)
        waiting = any(source.pending(conn, model, dims, 0, 1) for source in VECTOR_SOURCES)
        backend.commit(conn)
    finally:
        backend.close(conn)
        backend.stop()
    return waiting


def wait_embedded(database_url: str, model: str, dims: int, timeout_s: float = 3600) -> None:
    """Return once every document has its vector; RuntimeError after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while unembedded(database_url, model, dims):
        if time.monotonic() > deadline:
            raise RuntimeError(f"documents still without a vector of {model} after {timeout_s} s")
        time.sleep(0.2)
