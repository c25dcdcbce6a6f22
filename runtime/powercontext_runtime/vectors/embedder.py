"""Fills in vectors off the write path: a thread of the store's own, nudged by every write.

Its queues are the database itself: Memory's head versions (`rows.pending`) and Experience's and
Topic Memory's head revisions (`store/artifact_vectors.py`) without a vector of the configured
model, each in key order; every round takes the next batch of each. A batch is embedded outside
any transaction and stored in one short write per Scope; the unique key keeps a document from
being stored twice when two servers share the database. An endpoint that fails leaves the queue as
it was, and the thread backs off (`backoff.py`, a state of its own: a batch's deadline is not the
query's): writes during the back-off do not wake it, and at its end it tries the next batch again,
so nothing is lost across an outage or a restart, and a dead endpoint is asked once a period, not
once a write. A database that fails is tried again after RETRY_S.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from itertools import groupby

from ..nudged_thread import NudgedThread
from ..search import Conn
from . import rows
from .backoff import Attempt, Backoff
from .leg import EmbeddingFailed, EmbeddingLeg, Vectors

COALESCE_S = 0.05
RETRY_S = 5.0

logger = logging.getLogger("powercontext.store")

Transaction = Callable[[bool], AbstractContextManager[Conn]]


@dataclass(frozen=True, slots=True)
class VectorSource:
    """One queue: `pending(conn, model, dims, after, limit)` lists (key, scope_key, text) of
    documents after `after` without a vector, by key; `save(conn, scope_key, model, keys, vectors)`
    stores those still heads and says how many."""

    pending: Callable[[Conn, str, int, int, int], list[tuple[int, int, str]]]
    save: Callable[[Conn, int, str, Sequence[int], Vectors], int]


MEMORY_SOURCE = VectorSource(rows.pending, rows.save)


class VectorEmbedder(NudgedThread):
    def __init__(self, leg: EmbeddingLeg, transaction: Transaction, sources: Sequence[VectorSource]) -> None:
        super().__init__("powercontext-embedder", COALESCE_S, join_s=10)
        self._leg = leg
        self._transaction = transaction
        self._sources = tuple(sources)
        # Per queue, the documents up to here have their vector (new documents get larger keys,
        # unless an erasure freed the largest: SQLite hands it out again, hence `rewind`).
        self._after = [0] * len(self._sources)
        self._rewound = threading.Event()
        self._retry: threading.Timer | None = None
        self._backoff = Backoff(leg.backoff, leg.clock)

    def _work(self) -> None:
        wait = self._backoff.remaining()
        if wait > 0:  # a write's nudge during the back-off: the timer wakes the thread at its end
            self._retry_in(wait)
            return
        try:
            while not self.stopping() and self.embed_next():
                pass
        except EmbeddingFailed as exc:
            wait = self._backoff.failed(Attempt.PROBE)  # each batch in turn: every failure counts
            logger.warning("the embedding endpoint failed (%s); retrying in %.0f s", exc.reason, wait)
            self._retry_in(wait)
        except Exception:  # the database was busy or away: try again later
            logger.warning("a vector batch failed; retrying", exc_info=True)
            self._retry_in(RETRY_S)

    def rewind(self) -> None:
        """Look through every queue from its start again (after an erasure), then work."""
        self._rewound.set()
        self.nudge()

    def embed_next(self) -> bool:
        """Embed and store the next batch of each queue; False when every queue is empty."""
        if self._rewound.is_set():  # cleared on this thread, so a rewind is never lost mid-batch
            self._rewound.clear()
            self._after = [0] * len(self._sources)
        return any([self._embed_batch(queue) for queue in range(len(self._sources))])  # each its turn

    def _embed_batch(self, queue: int) -> bool:
        source = self._sources[queue]
        with self._transaction(False) as conn:
            batch = source.pending(
                conn, self._leg.space, self._leg.dims, self._after[queue], self._leg.batch_size
            )
        if not batch:
            return False
        vectors = self._leg.document_vectors([text for _, _, text in batch], self._leg.batch_timeout_s)
        self._backoff.succeeded()
        at = 0
        for scope_key, group in groupby(batch, key=lambda row: row[1]):
            keys = [key for key, _, _ in group]
            with self._transaction(True) as conn:
                source.save(conn, scope_key, self._leg.space, keys, vectors[at : at + len(keys)])
            at += len(keys)
        self._after[queue] = batch[-1][0]
        return True

    def _retry_in(self, seconds: float) -> None:
        if self._retry is not None:
            self._retry.cancel()
        self._retry = threading.Timer(seconds, self.nudge)
        self._retry.daemon = True
        self._retry.start()

    def _last(self) -> None:
        if self._retry is not None:
            self._retry.cancel()
