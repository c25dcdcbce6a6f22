"""Fusion of the lexical and the vector ranking of one Scope, and the pool's round-robin shares
(pure functions).

A hit's fused score is its lexical score as a share of the Scope's best for the query, plus
`weight` times how many standard deviations its cosine lies above the mean cosine of the Scope's
vectors (nothing when below). The two legs speak in their own units: BM25 grows with the query's
length and the words' rarity, a model's cosines crowd into a band of their own (all-MiniLM-L6-v2
puts unrelated turns near 0.1, WordLlama near 0.4). Scaling each by what the Scope itself shows
gives one weight that means the same for any query and any model, and unlike reciprocal ranks it
keeps how far apart two hits are.

Tuned on LoCoMo conversations 1-5 (Memory 8, 8000 bytes, question-level recall; all-MiniLM-L6-v2,
lexical 0.715, reciprocal-rank fusion at its best, k 2 and weight 0.35, 0.730): weight 0.15 gave
0.744, 0.17 0.746, 0.18 0.748, 0.2 0.748, 0.22 0.743; depth 16 0.735, 32 0.739, 40 0.748, 64 0.749,
100 to 200 0.748. The standard score counted below the mean too gave the same (0.748); min-max
scaling of the cosines among the 64 best, 0.743.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

# The vector leg's weight: what one standard deviation of cosine above the Scope's mean adds, against
# 1 for the best lexical hit.
VECTOR_WEIGHT = 0.18
# How deep each leg is read before fusing: a hit the vector leg ranks 20th counts its own lexical
# score, not none, when the lexical leg ranked it among this many.
FUSION_DEPTH = 64


Floats = npt.NDArray[np.float64]
Keys = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class Cosines:
    """What fusion reads of one Scope's vectors' cosines to the query."""

    nearest_keys: Keys  # the nearest document keys, best first
    nearest: Floats  # their cosines
    lexical: Floats  # the lexical hits' own cosines, in their order (NaN: a hit not embedded yet)
    mean: float  # over all of the Scope's vectors
    spread: float  # their standard deviation

    @classmethod
    def absent(cls, lexical_hits: int) -> Cosines:
        """No vectors: fusion keeps the lexical order."""
        return cls(np.empty(0, np.int64), np.empty(0), np.full(lexical_hits, np.nan), 0.0, 0.0)


def fuse(
    lexical: Sequence[tuple[int, float]],
    cosines: Cosines,
    limit: int,
    weight: float = VECTOR_WEIGHT,
) -> list[tuple[int, float]]:
    """The best `limit` of the lexical hits (keys with scores, best first) and the nearest vectors,
    by fused score, best first. A hit without a vector adds nothing for it. Equal scores keep the
    lexical order, then the newer key first, as lexical ties do."""
    count = len(lexical)
    if not len(cosines.nearest_keys):  # no vectors: the lexical order, as shares of its best
        best = lexical[0][1] if count else 0.0
        return [(key, score / best if best > 0 else 0.0) for key, score in lexical[:limit]]
    lexical_keys = np.fromiter((key for key, _ in lexical), np.int64, count)
    lexical_scores = np.fromiter((score for _, score in lexical), np.float64, count)
    best = lexical_scores[0] if count else 0.0
    keys = np.concatenate([lexical_keys, cosines.nearest_keys])
    scores = np.zeros(len(keys))
    if best > 0:
        scores[:count] = lexical_scores / best
    similarity = np.concatenate([cosines.lexical, cosines.nearest])
    rank = np.concatenate([np.arange(count), np.full(len(cosines.nearest_keys), count)])
    _, first = np.unique(keys, return_index=True)  # a key both legs found counts once, as a lexical hit
    keys, scores, similarity, rank = keys[first], scores[first], similarity[first], rank[first]
    if cosines.spread > 0:
        above = (similarity - cosines.mean) / cosines.spread
        scores += weight * np.where(above > 0, above, 0.0)  # NaN (no vector) is not above
    order = np.lexsort((-keys, rank, -scores))[:limit]
    return list(zip(keys[order].tolist(), scores[order].tolist(), strict=True))


def round_robin_shares(lengths: Sequence[int], cap: int | None) -> list[int]:
    """How many of each Scope's hits (`lengths`, in Scope order) a round-robin merge of them all,
    stopped at `cap`, takes."""
    if cap is None:
        return list(lengths)
    taken = [0] * len(lengths)
    total = 0
    for i in range(max(lengths, default=0)):
        for scope, length in enumerate(lengths):
            if i < length and total < cap:
                taken[scope] += 1
                total += 1
    return taken
