"""The embedding leg at recall: the query's vector before the read (none while the endpoint is
backed off from, `backoff.py`), then each Scope's lexical ranking of a family fused with its vectors'
cosines inside the read's snapshot."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from ..models import EXPERIENCE_FAMILY, MEMORY_FAMILY, TOPIC_FAMILY
from ..search import Conn
from . import rows
from .backoff import Backoff
from .fusion import FUSION_DEPTH, Cosines, fuse, round_robin_shares
from .leg import EmbeddingFailed, EmbeddingLeg, Vectors, unit
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
        self.index = ScopeIndex(leg.space, leg.dims, leg.cache_bytes)
        self._backoff = Backoff(leg.backoff, leg.clock)

    def query_vector(self, text: str) -> Vectors | None:
        """The query's unit vector; None when the query is blank, or (counted by reason) when the
        endpoint failed within the deadline or is being backed off from: recall answers lexically."""
        if not text.strip():
            return None
        attempt = self._backoff.admit()
        if attempt is None:
            self.leg.on_fallback("backoff")
            return None
        answered = False  # the endpoint answered: with the vector, or refusing this one text
        try:
            found = self.leg.query_vector(text, self.leg.query_timeout_s)
            answered = True
        except EmbeddingFailed as exc:
            answered = exc.refused
            self.leg.on_fallback(exc.reason)
            return None
        finally:  # whatever ends the call, a probe must not stay in flight
            if answered:
                self._backoff.succeeded()
            else:
                self._backoff.failed(attempt)
        return unit(found)

    @staticmethod
    def lexical_depth(limit: int) -> int:
        """How deep `fuse` reads each Scope's lexical ranking for a pool of `limit`."""
        return max(limit, FUSION_DEPTH)

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
        """Each Scope's `limit` best of `family` by the fused score of both legs (`fusion.py`; its
        lexical ranking read `lexical_depth(limit)` deep), cut to its share of a round-robin merge capped at
        `merge_cap` (the pool rule lexical recall follows). A Scope's `excluded` document keys
        (expired heads) are left out of its vector ranking before the cut, as the lexical leg
        leaves them out of its own."""
        table = TABLES[family]
        fused = []
        for scope_key, ranked in zip(scope_keys, lexical, strict=True):
            if scope_key is None:  # no such Scope: nothing either leg could find
                cosines = Cosines.absent(len(ranked))
            else:
                left_out = (excluded or {}).get(scope_key, ())
                asked = [key for key, _ in ranked]
                cosines = self.index.cosines(conn, table, scope_key, query, FUSION_DEPTH, asked, left_out)
            fused.append(fuse(ranked, cosines, limit, self.leg.vector_weight))
        shares = round_robin_shares([len(hits) for hits in fused], merge_cap)
        return [hits[:share] for hits, share in zip(fused, shares, strict=True)]
