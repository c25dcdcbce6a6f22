"""Reciprocal-rank fusion of the lexical and the vector ranking of one Scope (pure functions)."""

from __future__ import annotations

from collections.abc import Sequence

# Tuned on LoCoMo conversations 1-5 (Memory 8, 8000 bytes; question-level recall). With all-MiniLM-
# L6-v2, the model the evaluation serves (lexical 0.715): k 2 with weight 0.25 gave 0.727, 0.35 0.730,
# 0.5 0.725, 1 0.718; k 3 with 0.35 0.728; k 10 with 1 0.710. With WordLlama before it (lexical 0.644,
# before the neighbour rule): k 60 with 1 gave 0.623; k 2 with 0.5 0.649. The usual 60 flattens a
# 16-deep list: a hit both legs rank anywhere beats the lexical leg's first, so a small k keeps the
# lexical order's say.
RRF_K = 2
# The vector leg's weight against the lexical leg's 1.
VECTOR_WEIGHT = 0.35


def fuse(
    lexical: Sequence[int],
    semantic: Sequence[int],
    limit: int,
    k: float = RRF_K,
    vector_weight: float = VECTOR_WEIGHT,
) -> list[tuple[int, float]]:
    """Keys of both rankings by fused score 1/(k+rank) (+ weight/(k+rank)), best first, at most
    `limit`. Ties keep the lexical order, then the newer key first, as lexical ties do."""
    scores: dict[int, float] = {}
    lexical_rank = {key: rank for rank, key in enumerate(lexical)}
    for rank, key in enumerate(lexical):
        scores[key] = 1.0 / (k + rank + 1)
    for rank, key in enumerate(semantic):
        scores[key] = scores.get(key, 0.0) + vector_weight / (k + rank + 1)
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
