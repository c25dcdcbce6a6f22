"""The embedding leg at recall: the query's vector before the read, then each Scope's lexical
ranking of a family fused with its vector ranking inside the read's snapshot."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from ..models import EXPERIENCE_FAMILY, MEMORY_FAMILY, TOPIC_FAMILY
from ..search import Conn
from . import rows
from .fusion import fuse, round_robin_shares
from .leg import EmbeddingLeg, Vectors
from .scope_index import ScopeIndex

Ranked = list[list[tuple[int, float]]]

# Where each searched family's vectors are stored.
TABLES = {
    MEMORY_FAMILY: rows.MEMORY_VECTORS,
    EXPERIENCE_FAMILY: rows.artifact_vectors(EXPERIENCE_FAMILY),
    TOPIC_FAMILY: rows.artifact_vectors(TOPIC_FAMILY),
}


class VectorRecall:
    def __init__(self, leg: EmbeddingLeg) -> None:
        self.leg = leg
        self.index = ScopeIndex(leg.model, leg.dims, leg.cache_bytes)

    def query_vector(self, text: str) -> Vectors | None:
        """None when the query is blank or the endpoint failed (recall answers lexically)."""
        return self.leg.query_vector(text) if text.strip() else None

    def fuse(
        self,
        conn: Conn,
        family: str,
        scope_keys: Sequence[int | None],
        lexical: Ranked,
        query: Vectors,
        limit: int,
        merge_cap: int | None,
        excluded: Mapping[int, Collection[int]] | None = None,
    ) -> Ranked:
        """Each Scope's `limit` best of `family` by reciprocal rank of both legs, cut to its share
        of a round-robin merge capped at `merge_cap` (the pool rule lexical recall follows). A
        Scope's `excluded` document keys (expired heads) are left out of its vector ranking before
        the cut, as the lexical leg leaves them out of its own."""
        table = TABLES[family]
        fused = []
        for scope_key, ranked in zip(scope_keys, lexical, strict=True):
            semantic = []
            if scope_key is not None:
                left_out = (excluded or {}).get(scope_key, ())
                semantic = self.index.top(conn, table, scope_key, query, limit, left_out)
            fused.append(
                fuse([key for key, _ in ranked], semantic, limit, self.leg.rrf_k, self.leg.vector_weight)
            )
        shares = round_robin_shares([len(hits) for hits in fused], merge_cap)
        return [hits[:share] for hits, share in zip(fused, shares, strict=True)]
