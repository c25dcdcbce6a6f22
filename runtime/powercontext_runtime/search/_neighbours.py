"""Neighbouring entries: a Memory hit whose neighbour also matches the query ranks higher.

A conversation is remembered turn by turn, and the answer to a question often sits in the turn
next to the one that shares its words (the question's words in one turn, the reply in the next).
So a Memory hit gains `NEIGHBOUR_WEIGHT` times the score of its better-scoring neighbour, where
neighbours are the documents just before and after it in key order among the Scope's live Memory
documents (the entry written just before or after it there), counted only when that neighbour is
itself among the `NEIGHBOUR_DEPTH` best by BM25. Key order and scores are the same on every
backend, so the new order is too. Chosen on LoCoMo's dev conversations (docs/evaluation.md):
question-level evidence recall of Memory only, limit 8, 0.644 -> 0.697.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from ._bm25 import SCORE_DIGITS

# The families whose hits take their neighbours' scores: Memory only (an Experience or a topic is
# written on its own, so the one before it says nothing about it).
NEIGHBOUR_FAMILIES = frozenset({"memory"})
# How many BM25 hits are rescored: deeper finds more neighbours (dev recall 0.691 at 48, 0.697 at
# 64, 0.701 at 128) for a longer sort of the first ranking.
NEIGHBOUR_DEPTH = 64
# What share of the neighbour's score a hit gains (dev: 0.4 -> 0.694, 0.5 -> 0.697, 0.6 -> 0.698
# with fewer multi-hop turns found).
NEIGHBOUR_WEIGHT = 0.5
_SCALE = 10.0**SCORE_DIGITS


def ranking_depth(family: str, limit: int) -> int:
    """How many BM25 hits the first ranking keeps so that `with_neighbours` can pick `limit`."""
    return max(limit, NEIGHBOUR_DEPTH) if family in NEIGHBOUR_FAMILIES else limit


def with_neighbours(
    ranked: Sequence[tuple[int, float]], live_keys: npt.NDArray[np.int64], limit: int
) -> list[tuple[int, float]]:
    """The `limit` best of `ranked` ((key, score), best first) once each has gained its
    neighbours' share; `live_keys` are the Scope family's live document keys, sorted. Scores are
    rounded as search rounds them (numpy's: scale, round half to even, unscale); equal scores go
    to the larger key. Plain Python: for 64 hits it is faster than numpy's per-call overhead."""
    positions = live_keys.searchsorted([key for key, _ in ranked]).tolist()
    score_at = dict(zip(positions, [score for _, score in ranked], strict=True))
    if not any(position + 1 in score_at for position in positions):
        return list(ranked[:limit])  # no two hits are neighbours: the order stands
    rescored = []
    for (key, score), position in zip(ranked, positions, strict=True):
        near = max(score_at.get(position - 1, 0.0), score_at.get(position + 1, 0.0))
        rescored.append((-round((score + NEIGHBOUR_WEIGHT * near) * _SCALE) / _SCALE, -key))
    rescored.sort()
    return [(-key, -score) for score, key in rescored[:limit]]
