"""Top-k ranking that scores only the documents that can rank: MaxScore (Turtle and Flood, 1995)
over whole posting lists, exact to the last rounded digit of `scored_documents`.

A query term can add at most its `bound` (the largest contribution among its postings) to a
document's score. Taking the terms by falling bound, the first few (the *essential* ones, usually
the rare words) are scored over all their postings; the partial sums give a `threshold` that at
least `limit` live, matching documents reach. When even a document holding every other term
(the rest, usually the common words) could not reach it, a document that holds none of the
essential terms cannot rank, and the common words' long posting lists are only looked up for
the few candidates (binary search in postings kept in slot order), never scanned.

With Memory's neighbour rule a hit also gains NEIGHBOUR_WEIGHT times its better neighbour's
score, so every bound counts that share too: a document beside no candidate can reach at most
(1 + NEIGHBOUR_WEIGHT) x rest. The survivors' scores, and their neighbours', are then summed
term by term in query order, exactly as `scored_documents` adds them, and rounded and ordered by
the same functions, so the answer is the same to the bit: same keys, scores and ties.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np
import numpy.typing as npt

from ._bm25 import SCORE_DIGITS, Documents, TermPostings, best_of, neighbour_scores, scored_documents
from ._neighbours import NEIGHBOUR_WEIGHT, KeyOrder

# What bounds are compared with: far above the float error of sums of a few dozen terms (about
# 1e-13 here) and the 1.25e-9 that rounding own, neighbour and sum can move a score, so a
# document left out rounds strictly below `limit` kept ones and cannot even tie with them.
MARGIN = 1e-8
# Pruning pays once a query holds this many postings; fewer are scored whole as fast.
PRUNE_POSTINGS = 20_000
# It stops paying when the essential terms hold more than this share of the postings.
ESSENTIAL_SHARE = 0.25


@dataclass(frozen=True, slots=True)
class BoundedTerm:
    """A query term's postings in ascending slot order, each document once, their positive
    contributions, and the largest of them."""

    slots: npt.NDArray[np.int32]
    added: npt.NDArray[np.float64]
    bound: float


def term_bound(slots: npt.NDArray[np.int32], added: npt.NDArray[np.float64]) -> float | None:
    """The largest contribution of a term's postings, or None when pruning cannot use them
    (slots not strictly ascending, a contribution not positive, or no postings)."""
    if len(added) == 0 or not bool((slots[1:] > slots[:-1]).all()) or float(added.min()) <= 0.0:
        return None
    return float(added.max())


def top_documents(
    documents: Documents,
    weighted: Sequence[tuple[TermPostings, npt.NDArray[np.float64]]],
    bounds: Sequence[float | None],
    limit: int,
) -> list[tuple[int, float]]:
    """`scored_documents(documents, weighted, limit)`, pruned where that pays; `bounds` holds
    each term's `term_bound`."""
    if len(weighted) > 1 and sum(len(postings.slots) for postings, _ in weighted) >= PRUNE_POSTINGS:
        terms = [
            BoundedTerm(postings.slots, added, bound)
            for (postings, added), bound in zip(weighted, bounds, strict=True)
            if bound is not None
        ]
        if len(terms) == len(weighted):
            found = pruned_top(documents, terms, limit)
            if found is not None:
                return found
    return scored_documents(documents, weighted, limit)


@dataclass(frozen=True, slots=True)
class _Candidates:
    """The live documents holding an essential term: slots ascending, their key-order positions
    (ascending too when the order is by slot) and partial scores, what the other terms can add at
    most, and a score `limit` of them surely reach."""

    slots: npt.NDArray[np.int32]
    positions: npt.NDArray[np.intp] | None
    partial: npt.NDArray[np.float64]
    rest: float
    threshold: float


def pruned_top(
    documents: Documents, terms: Sequence[BoundedTerm], limit: int
) -> list[tuple[int, float]] | None:
    """`scored_documents` over `terms` (in query order) without scoring every document, or None
    when no small set of essential terms rules the others out."""
    candidates = _essential(documents, terms, limit)
    if candidates is None:
        return None
    order = documents.key_order
    if order is None:
        upper = candidates.partial + candidates.rest
        kept = candidates.slots[upper >= candidates.threshold - MARGIN]
        own = exact_scores(terms, kept)
        return best_of(documents.keys, kept.astype(np.intp), np.round(own, SCORE_DIGITS), limit)
    assert candidates.positions is not None  # found for a key order
    return _neighbour_top(documents.keys, order, terms, candidates.positions, candidates, limit)


def _essential(documents: Documents, terms: Sequence[BoundedTerm], limit: int) -> _Candidates | None:
    """The candidates of the fewest highest-bound terms that rule out every other document."""
    by_bound = sorted(range(len(terms)), key=lambda i: -terms[i].bound)
    budget = ESSENTIAL_SHARE * sum(len(term.slots) for term in terms)
    reach = 1.0 if documents.key_order is None else 1.0 + NEIGHBOUR_WEIGHT
    held = 0
    for count in range(1, len(terms)):
        held += len(terms[by_bound[count - 1]].slots)
        if held > budget:
            return None
        rest = math.fsum(terms[i].bound for i in by_bound[count:])
        slots, partial = _partial_scores(documents, [terms[i] for i in by_bound[:count]])
        positions = _positions(documents.key_order, slots)
        threshold = _threshold(partial, positions, limit)
        if reach * rest < threshold - MARGIN:
            return _Candidates(slots, positions, partial, rest, threshold)
    return None


def _partial_scores(
    documents: Documents, essential: Sequence[BoundedTerm]
) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.float64]]:
    """The live documents holding an essential term (slots ascending) and the sum of what those
    terms add to each: a lower bound of its score."""
    if len(essential) == 1:
        slots, partial = essential[0].slots, essential[0].added
    else:
        slots, inverse = np.unique(np.concatenate([term.slots for term in essential]), return_inverse=True)
        weights = np.concatenate([term.added for term in essential])
        # With weights, bincount sums float64 (its stubs only know the integer form).
        partial = cast(
            "npt.NDArray[np.float64]",
            np.bincount(inverse.reshape(-1), weights=weights, minlength=len(slots)),
        )
    if documents.alive is not None:
        live = documents.alive[slots]
        slots, partial = slots[live], partial[live]
    return slots, partial


def _positions(order: KeyOrder | None, slots: npt.NDArray[np.int32]) -> npt.NDArray[np.intp] | None:
    """Where live `slots` stand in key order (None: no neighbours, no order to keep)."""
    if order is None:
        return None
    if order.slots is None or order.positions is None:
        return slots.astype(np.intp)
    return order.positions[slots]


def _threshold(partial: npt.NDArray[np.float64], positions: npt.NDArray[np.intp] | None, limit: int) -> float:
    """A raw score `limit` of the candidates surely reach (0 when fewer surely match): each one
    whose partial score is above 1e-9 matches (its own score rounds above 0) and scores at least
    that, plus, with neighbours, NEIGHBOUR_WEIGHT times its better candidate neighbour's."""
    lower = partial
    if positions is not None:
        ordered = np.argsort(positions, kind="stable")
        lower = np.empty_like(partial)
        lower[ordered] = partial[ordered] + NEIGHBOUR_WEIGHT * _adjacent_best(
            positions[ordered], partial[ordered], 0.0
        )
    sure = lower[partial > 1e-9]
    if sure.size < limit:
        return 0.0
    return float(np.partition(sure, sure.size - limit)[sure.size - limit])


def _adjacent_best(
    positions: npt.NDArray[np.intp], values: npt.NDArray[np.float64], absent: float
) -> npt.NDArray[np.float64]:
    """For each of the ascending key-order `positions`, the larger value of those one before and
    one after it; a neighbour not among them counts `absent`."""
    best = np.full(len(values), absent)
    if len(values) > 1:
        before = positions[1:] - positions[:-1] == 1
        best[1:][before] = np.maximum(best[1:][before], values[:-1][before])
        best[:-1][before] = np.maximum(best[:-1][before], values[1:][before])
    return best


def exact_scores(terms: Sequence[BoundedTerm], slots: npt.NDArray[np.int32]) -> npt.NDArray[np.float64]:
    """The raw scores of `slots` as `scored_documents` sums them: from 0.0, each term's
    contribution in query order (adding 0.0 for a term a document lacks changes nothing)."""
    scores = np.zeros(len(slots))
    for term in terms:
        scores += _contributions_at(term, slots)
    return scores


def _contributions_at(term: BoundedTerm, slots: npt.NDArray[np.int32]) -> npt.NDArray[np.float64]:
    """What `term` adds to each of `slots` (0.0 where it has no posting), by binary search."""
    at = np.searchsorted(term.slots, slots)
    np.minimum(at, len(term.slots) - 1, out=at)
    return np.where(term.slots[at] == slots, term.added[at], 0.0)


def _neighbour_top(
    keys: npt.NDArray[np.int64],
    order: KeyOrder,
    terms: Sequence[BoundedTerm],
    at_order: npt.NDArray[np.intp],
    candidates: _Candidates,
    limit: int,
) -> list[tuple[int, float]]:
    """`pruned_top` with the neighbour rule: the candidates (at key-order positions `at_order`)
    and the documents beside them that can still rank, scored exactly with their neighbours."""
    live = order.count if order.slots is None else len(order.slots)
    ordered = np.argsort(at_order, kind="stable")
    positions, partial = at_order[ordered], candidates.partial[ordered]
    # Everyone who might rank: a candidate or a document beside one.
    near = np.unique(np.concatenate((positions - 1, positions, positions + 1)))
    near = near[(near >= 0) & (near < live)]
    own_upper = _at(positions, partial, near) + candidates.rest
    nearest_upper = np.maximum(
        _upper_at(positions, partial, candidates.rest, near - 1, live),
        _upper_at(positions, partial, candidates.rest, near + 1, live),
    )
    kept = near[own_upper + NEIGHBOUR_WEIGHT * nearest_upper >= candidates.threshold - MARGIN]
    # Their exact scores need their neighbours' too.
    scored = np.unique(np.concatenate((kept - 1, kept, kept + 1)))
    scored = scored[(scored >= 0) & (scored < live)]
    own = exact_scores(terms, _slots_at(order, scored).astype(np.int32))
    nearest = np.maximum(_at(scored, own, kept - 1), _at(scored, own, kept + 1))
    at, rescored = neighbour_scores(kept, _at(scored, own, kept), nearest)
    return best_of(keys, _slots_at(order, at), rescored, limit)


def _at(
    positions: npt.NDArray[np.intp], values: npt.NDArray[np.float64], wanted: npt.NDArray[np.intp]
) -> npt.NDArray[np.float64]:
    """The value at each `wanted` position among the ascending `positions`, 0.0 where absent."""
    if len(positions) == 0:
        return np.zeros(len(wanted))
    at = np.searchsorted(positions, wanted)
    np.minimum(at, len(positions) - 1, out=at)
    return np.where(positions[at] == wanted, values[at], 0.0)


def _upper_at(
    positions: npt.NDArray[np.intp],
    partial: npt.NDArray[np.float64],
    rest: float,
    wanted: npt.NDArray[np.intp],
    live: int,
) -> npt.NDArray[np.float64]:
    """The most a live document at each `wanted` key-order position can score on its own (0.0
    for a position beyond either end)."""
    inside = (wanted >= 0) & (wanted < live)
    return np.where(inside, _at(positions, partial, wanted) + rest, 0.0)


def _slots_at(order: KeyOrder, positions: npt.NDArray[np.intp]) -> npt.NDArray[np.intp]:
    return positions if order.slots is None else order.slots[positions]
