"""Neighbouring entries: a Memory hit whose neighbour also matches the query ranks higher.

A conversation is remembered turn by turn, and the answer to a question often sits in the turn
next to the one that shares its words (the question's words in one turn, the reply in the next).
So a Memory hit gains `NEIGHBOUR_WEIGHT` times the rounded score of its better-scoring neighbour,
where neighbours are the documents just before and after it in key order among the Scope's live
Memory documents (the entry written just before or after it there). Only a document that matches
the query itself can rank; one that does not match gains nothing from its neighbours. Key order
and scores are the same on every backend, so the new order is too. Chosen on LoCoMo's dev
conversations (docs/evaluation.md): question-level evidence recall of Memory only, limit 8,
0.644 -> 0.697 with a first ranking cut at 64 hits, more without the cut.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

# The families whose hits take their neighbours' scores: Memory only (an Experience or a topic is
# written on its own, so the one before it says nothing about it).
NEIGHBOUR_FAMILIES = frozenset({"memory"})
# What share of the neighbour's score a hit gains (dev: 0.4 -> 0.694, 0.5 -> 0.697, 0.6 -> 0.698
# with fewer multi-hop turns found).
NEIGHBOUR_WEIGHT = 0.5

# Per document slot, the slot of the live document before it and after it in key order (-1: none).
Neighbours = tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]


def neighbour_slots(keys: npt.NDArray[np.int64], alive: npt.NDArray[np.bool_]) -> Neighbours:
    """Each live slot's neighbours in key order among the live slots; dead slots get -1 (they
    never score, so nothing reads theirs)."""
    live = np.flatnonzero(alive)
    order = live[np.argsort(keys[live], kind="stable")]
    before = np.full(len(keys), -1, np.intp)
    after = np.full(len(keys), -1, np.intp)
    before[order[1:]] = order[:-1]
    after[order[:-1]] = order[1:]
    return before, after
