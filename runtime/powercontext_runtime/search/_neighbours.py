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

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

# The families whose hits take their neighbours' scores: Memory only (an Experience or a topic is
# written on its own, so the one before it says nothing about it).
NEIGHBOUR_FAMILIES = frozenset({"memory"})
# What share of the neighbour's score a hit gains (dev: 0.4 -> 0.694, 0.5 -> 0.697, 0.6 -> 0.698
# with fewer multi-hop turns found).
NEIGHBOUR_WEIGHT = 0.5


@dataclass(frozen=True, slots=True)
class KeyOrder:
    """A family's live slots in key order, so each one's neighbours are the slots beside it there.
    `slots` None: all `count` slots are live and their keys ascend with them (the usual case:
    documents are appended in key order), so scores need no reordering; `positions` is each
    slot's place in `slots` (-1: dead)."""

    count: int
    slots: npt.NDArray[np.intp] | None = None
    positions: npt.NDArray[np.intp] | None = None

    def beside(self, slot: int) -> tuple[int, int]:
        """The slots before and after `slot` in key order (-1: none)."""
        if self.slots is None or self.positions is None:
            return slot - 1, slot + 1 if slot + 1 < self.count else -1
        at = int(self.positions[slot])
        after = int(self.slots[at + 1]) if at + 1 < len(self.slots) else -1
        return int(self.slots[at - 1]) if at > 0 else -1, after


def key_order(keys: npt.NDArray[np.int64], alive: npt.NDArray[np.bool_], ascending: bool = False) -> KeyOrder:
    """The live slots of `keys` in key order (found once per generation by the mirror);
    `ascending`: the caller knows every key is above the one before it, so nothing is checked."""
    if ascending and bool(alive.all()):
        return KeyOrder(len(keys))
    live = np.flatnonzero(alive)
    if not ascending:
        live_keys = keys[live]
        ascending = bool((live_keys[1:] > live_keys[:-1]).all())
        if ascending and live.size == len(keys):
            return KeyOrder(len(keys))
    # Keys usually ascend with slots, dead ones or not: then the live slots are in key order as
    # they are, and sorting a million of them again after each write is a waste.
    slots = live if ascending else live[np.argsort(keys[live], kind="stable")]
    positions = np.full(len(keys), -1, np.intp)
    positions[slots] = np.arange(slots.size)
    return KeyOrder(len(keys), slots, positions)
