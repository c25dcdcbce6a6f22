"""What the server hands the Runtime to turn on the embedding leg: a function that embeds texts
within a deadline, the model's name and dimensions, the prefixes some models want before a query
and before a stored text, a callback counting fallbacks, and how to back off from an endpoint that
fails (`backoff.py`; the clock is the test's to set).

The Runtime imports no HTTP code: the server's `embedding_client` speaks to the endpoint.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
from threadpoolctl import threadpool_limits

from ..errors import PowerContextError
from .backoff import BackoffPolicy, Clock
from .fusion import VECTOR_WEIGHT

# 1.9 KiB a vector of 384 dimensions, float32 and int8: some 140,000 of them (vectors/scope_index.py).
DEFAULT_CACHE_BYTES = 256 * 2**20

Vectors = npt.NDArray[np.float32]


class EmbeddingFailed(PowerContextError):
    """The endpoint was slow, down or answered something unusable; `reason` names which.
    `refused`: it answered, refusing this input only (a 400-like status): it is up, and a query's
    failure is no reason to stop asking it for others."""

    def __init__(self, reason: str, *, refused: bool = False) -> None:
        super().__init__(f"embedding failed: {reason}")
        self.reason = reason
        self.refused = refused


# texts, deadline in seconds -> one float32 row per text; raises EmbeddingFailed.
Embed = Callable[[Sequence[str], float], Vectors]

# The longest name vectors are stored under (the `model` column's length on OceanBase).
MAX_SPACE_CHARS = 256


def vector_space(model: str, document_prefix: str = "") -> str:
    """The name a model's vectors are stored under: the model's own, or with a document prefix
    both (the same model's vectors of texts with another prefix, or none, are another space, so a
    change of prefix re-embeds as a change of model does, and no two spaces mix)."""
    return json.dumps([model, document_prefix], ensure_ascii=False) if document_prefix else model


@dataclass(frozen=True, slots=True)
class EmbeddingLeg:
    embed: Embed
    model: str
    dims: int
    query_timeout_s: float
    batch_timeout_s: float = 30.0
    batch_size: int = 64
    on_fallback: Callable[[str], None] = lambda reason: None
    vector_weight: float = VECTOR_WEIGHT
    cache_bytes: int = DEFAULT_CACHE_BYTES  # the searched vectors held in memory, every family's
    backoff: BackoffPolicy = field(default_factory=BackoffPolicy)
    clock: Clock = time.monotonic
    # Put before a query, and before a stored text, as they are embedded: models trained with such
    # prefixes (e5's `query: ` and `passage: `, nomic-embed-text's `search_query: ` and
    # `search_document: `) rank worse without them.
    query_prefix: str = ""
    document_prefix: str = ""

    @property
    def space(self) -> str:
        """What stored vectors are keyed by besides their dimensions (`vector_space`)."""
        return vector_space(self.model, self.document_prefix)

    def query_vector(self, text: str, timeout_s: float) -> Vectors:
        found: Vectors = self._vectors([self.query_prefix + text], timeout_s)[0]
        return found

    def document_vectors(self, texts: Sequence[str], timeout_s: float) -> Vectors:
        return self._vectors([self.document_prefix + text for text in texts], timeout_s)

    def _vectors(self, texts: Sequence[str], timeout_s: float) -> Vectors:
        """The texts' vectors, checked against the configured dimensions."""
        found = self.embed(texts, timeout_s)
        if found.shape != (len(texts), self.dims) or not np.isfinite(found).all():
            raise EmbeddingFailed("invalid")
        return found


def unit(vectors: Vectors) -> Vectors:
    """Rows scaled to length 1 (a zero row stays zero), so a dot product is the cosine."""
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    scaled: Vectors = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
    return scaled.astype(np.float32)


def one_blas_thread() -> None:
    """Run numpy's BLAS on one thread in this process from now on: call it where a process turns
    the leg on (the server's `create_app`, a benchmark). The leg's exact cosines are BLAS dot
    products over a few hundred vectors: a second thread only hands such work over, and on a busy
    2-core machine, when the leg still took a matrix-vector product over all of a Scope's 10k
    vectors, it took that from 0.7 ms to 8 ms at the median. Nothing else the Runtime does uses
    BLAS."""
    threadpool_limits(limits=1, user_api="blas")
