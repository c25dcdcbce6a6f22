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

# The vector leg's weight: what one standard deviation of cosine above the Scope's mean adds, against
# 1 for the best lexical hit.
VECTOR_WEIGHT = 0.18
# How deep each leg is read before fusing: a hit the vector leg ranks 20th counts its own lexical
# score, not none, when the lexical leg ranked it among this many.
FUSION_DEPTH = 64


@dataclass(frozen=True, slots=True)
class Cosines:
    """What fusion reads of one Scope's vectors' cosines to the query."""

    nearest: list[tuple[int, float]]  # the nearest document keys with their cosines, best first
    of: dict[int, float]  # the lexical hits' own cosines (a hit not embedded yet is absent)
    mean: float  # over all of the Scope's vectors
    spread: float  # their standard deviation


def fuse(
    lexical: Sequence[tuple[int, float]],
    cosines: Cosines,
    limit: int,
    weight: float = VECTOR_WEIGHT,
) -> list[tuple[int, float]]:
    """The best `limit` of the lexical hits (keys with scores, best first) and the nearest vectors,
    by fused score, best first. A hit without a vector adds nothing for it. Equal scores keep the
    lexical order, then the newer key first, as lexical ties do."""
    best = lexical[0][1] if lexical else 0.0
    scores = {key: score / best if best > 0 else 0.0 for key, score in lexical}
    similarity = {**cosines.of, **dict(cosines.nearest)}
    for key, _ in cosines.nearest:
        scores.setdefault(key, 0.0)
    if cosines.spread > 0:
        for key in scores:
            above = (similarity.get(key, cosines.mean) - cosines.mean) / cosines.spread
            if above > 0:
                scores[key] += weight * above
    lexical_rank = {key: rank for rank, (key, _) in enumerate(lexical)}
    unranked = len(lexical)
    order = sorted(scores, key=lambda key: (-scores[key], lexical_rank.get(key, unranked), -key))
    return [(key, scores[key]) for key in order[:limit]]


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
