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


def ranking_depth(family: str, limit: int) -> int:
    """How many BM25 hits the first ranking keeps so that `with_neighbours` can pick `limit`."""
    return max(limit, NEIGHBOUR_DEPTH) if family in NEIGHBOUR_FAMILIES else limit


def with_neighbours(
    ranked: Sequence[tuple[int, float]], live_keys: npt.NDArray[np.int64], limit: int
) -> list[tuple[int, float]]:
    """The `limit` best of `ranked` ((key, score), best first) once each has gained its
    neighbours' share; `live_keys` are the Scope family's live document keys, sorted. Scores are
    rounded as search rounds them (numpy's rounding); equal scores go to the larger key."""
    if not ranked:
        return []
    keys = np.fromiter((key for key, _ in ranked), np.int64, len(ranked))
    scores = np.fromiter((score for _, score in ranked), np.float64, len(ranked))
    positions = np.searchsorted(live_keys, keys)
    order = np.argsort(positions)  # the hits in key order; adjacent positions are neighbours
    beside = np.diff(positions[order]) == 1
    in_order = scores[order]
    near = np.zeros(len(order))
    near[:-1] = np.where(beside, in_order[1:], 0.0)  # the next one
    near[1:] = np.maximum(near[1:], np.where(beside, in_order[:-1], 0.0))  # or the one before
    gained = np.empty(len(order))
    gained[order] = near
    rescored = np.round(scores + NEIGHBOUR_WEIGHT * gained, SCORE_DIGITS)
    best = np.lexsort((-keys, -rescored))[:limit]
    return list(zip(keys[best].tolist(), rescored[best].tolist(), strict=True))
