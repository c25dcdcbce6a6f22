"""The optional embedding leg of Memory, Experience and Topic Memory recall
(docs/search-index.md, "Embedding leg").

Off unless the server is given an embedding endpoint. `leg` holds what the server hands in (an
`Embed` function, the model, its dimensions and prefixes); `rows` the SQL of stored vectors (one
per head entry version or head artifact revision, and model with its document prefix); `embedder`
the background thread that fills them; `scope_index` the exact cosine search over a Scope's
vectors of one family held in memory; `fusion` how the lexical ranking and the vectors' cosines
make one ranking. The store calls `VectorRecall.fuse` at one place (`SqlStore._ranked`).
"""

from .embedder import VectorEmbedder
from .fusion import FUSION_DEPTH, VECTOR_WEIGHT, Cosines, fuse, round_robin_shares
from .leg import (
    DEFAULT_CACHE_BYTES,
    MAX_SPACE_CHARS,
    Embed,
    EmbeddingFailed,
    EmbeddingLeg,
    one_blas_thread,
    vector_space,
)
from .recall import VectorRecall

__all__ = [
    "DEFAULT_CACHE_BYTES",
    "FUSION_DEPTH",
    "MAX_SPACE_CHARS",
    "VECTOR_WEIGHT",
    "Cosines",
    "Embed",
    "EmbeddingFailed",
    "EmbeddingLeg",
    "VectorEmbedder",
    "VectorRecall",
    "fuse",
    "one_blas_thread",
    "round_robin_shares",
    "vector_space",
]
