"""Top-k ranking that scores only the documents that can rank: MaxScore (Turtle and Flood, 1995)
over whole posting lists, exact to the last rounded digit of `scored_documents`.

A query term can add at most its `bound` (the largest contribution among its postings) to a
document's score. Taking the terms by falling bound, the first few (the *essential* ones, usually
the rare words) are scored over all their postings; the partial sums give a `threshold` that at
least `limit` live, matching documents reach. When even a document holding every other term
(the rest, usually the common words) could not reach it, a document that holds none of the
essential terms cannot rank, and the common words' long posting lists are only looked up for
the few candidates (binary search in postings kept in slot order), never scanned. Whether to
try is planned from the bounds and posting-list lengths before any posting is read, and what a
try may read is capped, so a query that is scored whole after all has paid little for it.

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

import numpy as np
import numpy.typing as npt

from ._bm25 import SCORE_DIGITS, Documents, TermPostings, best_of, neighbour_scores, scored_documents
from ._neighbours import NEIGHBOUR_WEIGHT, KeyOrder

# What bounds are compared with: far above the float error of sums of a few dozen terms (about
# 1e-13 here) and the 1.25e-9 that rounding own, neighbour and sum can move a score, so a
# document left out rounds strictly below `limit` kept ones and cannot even tie with them.
MARGIN = 1e-8
# Pruning pays once a query holds this many postings (fewer are scored whole as fast), and for
# limits up to PRUNE_LIMIT: a deeper limit lowers the threshold, and at 32 or 64 the candidates
# left cost more than scoring everything (bench/ranking.py).
PRUNE_POSTINGS = 20_000
PRUNE_LIMIT = 16
# It stops paying when its binary searches, at LOOKUP_COST documents' worth each, would cost more
# than scoring every document and posting (bench/ranking.py, 1M documents: some 50 ns a lookup
# against 8 ns a document).
LOOKUP_COST = 8
# The postings of the essential terms (each read, sorted and merged) may be at most this share of
# that cost, so that a query that prunes, or tries to and gives way, stays well below scoring
# everything.
ESSENTIAL_SHARE = 32


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
    if (
        len(weighted) > 1
        and limit <= PRUNE_LIMIT
        and sum(len(postings.slots) for postings, _ in weighted) >= PRUNE_POSTINGS
    ):
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
    """The live documents holding an essential term, ascending: by slot, or with the neighbour
    rule by key-order position; their partial scores; what the other terms add at most (`rest`);
    and a rounded score `limit` documents surely reach (`threshold`)."""

    at: npt.NDArray[np.intp]
    partial: npt.NDArray[np.float64]
    rest: float
    threshold: float


def pruned_top(
    documents: Documents, terms: Sequence[BoundedTerm], limit: int
) -> list[tuple[int, float]] | None:
    """`scored_documents` over `terms` (in query order) without scoring every document, or None
    when no small set of essential terms rules the others out."""
    found = _essential(documents, terms, limit)
    if found is None:
        return None
    order = documents.key_order
    if order is None:
        kept = found.at[found.partial + found.rest >= found.threshold - MARGIN]
    else:
        kept = _neighbour_survivors(found, _live(order))
    if not _pays(_lookups(order, terms, len(kept), len(found.at)), documents, terms):
        return None
    slots, rounded = _final_scores(order, terms, kept)
    return best_of(documents.keys, slots, rounded, limit)


def _essential(documents: Documents, terms: Sequence[BoundedTerm], limit: int) -> _Candidates | None:
    """The candidates of the fewest highest-bound terms that rule out every other document, or
    None, decided before any posting is read when the plan says pruning would not pay."""
    by_bound = sorted(range(len(terms)), key=lambda i: -terms[i].bound)
    order = documents.key_order
    reach = 1.0 if order is None else 1.0 + NEIGHBOUR_WEIGHT
    rests = [math.fsum(terms[i].bound for i in by_bound[count:]) for count in range(len(terms))]
    start = _first_essential_count(terms[by_bound[0]].bound, rests, reach)
    if start is None:
        return None
    held = sum(len(terms[i].slots) for i in by_bound[:start])
    if not _affordable(documents, terms, held):
        return None
    at, partial = _candidates_of(documents, [terms[i] for i in by_bound[:start]])
    for count in range(start, len(terms)):
        if count > start:
            added = terms[by_bound[count - 1]]
            held += len(added.slots)
            if not _affordable(documents, terms, held):
                return None
            at, partial = _merged(at, partial, *_live_postings(documents, added))
        threshold = _threshold(order, terms, at, partial, limit)
        if reach * rests[count] < threshold - MARGIN:
            return _Candidates(at, partial, rests[count], threshold)
    return None


def _first_essential_count(largest: float, rests: Sequence[float], reach: float) -> int | None:
    """How many terms, by falling bound, to score first: the fewest whose others could not reach
    the largest bound. (The threshold found is near the best single term's bound at 1M documents,
    bench/ranking.py, so a query that needs more rarely prunes, and then not for less work.)"""
    return next((count for count in range(1, len(rests)) if reach * rests[count] < largest - MARGIN), None)


def _candidates_of(
    documents: Documents, terms: Sequence[BoundedTerm]
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float64]]:
    """The live documents holding any of `terms`, ascending, and their partial scores."""
    at, partial = np.zeros(0, np.intp), np.zeros(0)
    for term in terms:
        at, partial = _merged(at, partial, *_live_postings(documents, term))
    return at, partial


def _affordable(documents: Documents, terms: Sequence[BoundedTerm], held: int) -> bool:
    """Whether essential terms of `held` postings cost little, and the exact scores of as many
    survivors as candidates would pay (bench/ranking.py: the planned query then rarely gives way,
    and when it does it has read at most 1/ESSENTIAL_SHARE of what scoring everything reads)."""
    return held * ESSENTIAL_SHARE <= _budget(documents, terms) and _pays(
        _lookups(documents.key_order, terms, held, held), documents, terms
    )


def _lookups(order: KeyOrder | None, terms: Sequence[BoundedTerm], kept: int, candidates: int) -> int:
    """The binary searches that score `kept` survivors of `candidates` exactly: with neighbours,
    each beside its two neighbours (at most three documents a survivor, or five a candidate, as
    survivors stand at or beside a candidate), and finding them (three a survivor)."""
    if order is None:
        return kept * len(terms)
    return min(3 * kept, 5 * candidates) * len(terms) + 3 * kept


def _budget(documents: Documents, terms: Sequence[BoundedTerm]) -> int:
    """What scoring every document costs, in documents and postings."""
    return len(documents.keys) + sum(len(term.slots) for term in terms)


def _pays(lookups: int, documents: Documents, terms: Sequence[BoundedTerm]) -> bool:
    """Whether `lookups` binary searches cost less than scoring every document and posting."""
    return lookups * LOOKUP_COST <= _budget(documents, terms)


def _live_postings(
    documents: Documents, term: BoundedTerm
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float64]]:
    """The live documents holding `term`, ascending by slot or, with a key order, by position in
    it, and what the term adds to each."""
    slots, added = term.slots, term.added
    if documents.alive is not None:
        live = documents.alive[slots]
        slots, added = slots[live], added[live]
    order = documents.key_order
    if order is None or order.slots is None or order.positions is None:
        return slots.astype(np.intp), added
    positions = order.positions[slots]
    ascending = np.argsort(positions, kind="stable")
    return positions[ascending], added[ascending]


def _merged(
    at: npt.NDArray[np.intp],
    partial: npt.NDArray[np.float64],
    more: npt.NDArray[np.intp],
    added: npt.NDArray[np.float64],
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float64]]:
    """Two ascending runs of documents and their partial scores as one, a document in both summed:
    a lower bound of each one's score. (A stable sort merges two sorted runs in linear time.)"""
    if len(at) == 0:
        return more, added
    joined = np.concatenate((at, more))
    ascending = np.argsort(joined, kind="stable")
    joined, values = joined[ascending], np.concatenate((partial, added))[ascending]
    starts = np.flatnonzero(np.concatenate(([True], joined[1:] != joined[:-1])))
    return joined[starts], np.add.reduceat(values, starts)


# Candidates scored exactly, per place in the limit, to raise the threshold.
_SAMPLED = 4


def _threshold(
    order: KeyOrder | None,
    terms: Sequence[BoundedTerm],
    at: npt.NDArray[np.intp],
    partial: npt.NDArray[np.float64],
    limit: int,
) -> float:
    """A rounded score `limit` documents surely reach (0.0 when fewer are known to): the
    limit-th best exact score of the candidates with the best lower bounds (the partial score,
    and with neighbours half the better adjacent candidate's). Each of them matches if its
    partial score is above 1e-9, as its own then rounds above 0."""
    lower = partial
    if order is not None:
        lower = partial + NEIGHBOUR_WEIGHT * _adjacent_best(at, partial)
    sure = np.flatnonzero(partial > 1e-9)
    if sure.size < limit:
        return 0.0
    sampled = min(sure.size, _SAMPLED * limit)
    best = sure[np.argpartition(lower[sure], sure.size - sampled)[sure.size - sampled :]]
    best.sort()
    rounded = _final_scores(order, terms, at[best])[1]
    rounded = rounded[rounded > 0.0]
    if rounded.size < limit:
        return 0.0
    return float(np.partition(rounded, rounded.size - limit)[rounded.size - limit])


def _adjacent_best(
    positions: npt.NDArray[np.intp], values: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """For each of the ascending key-order `positions`, the larger value of those one before and
    one after it (0.0 for a neighbour not among them)."""
    best = np.zeros(len(values))
    if len(values) > 1:
        before = positions[1:] - positions[:-1] == 1
        best[1:][before] = values[:-1][before]
        best[:-1][before] = np.maximum(best[:-1][before], values[1:][before])
    return best


def _neighbour_survivors(found: _Candidates, live: int) -> npt.NDArray[np.intp]:
    """The key-order positions, ascending, of the candidates and the documents beside them whose
    score can reach the threshold. A candidate scores at most its partial score plus `rest`, any
    other document `rest`, and a hit gains half the most its better neighbour can score."""
    at, rest, floor = found.at, found.rest, found.threshold - MARGIN
    own = found.partial + rest
    next_joined = np.zeros(len(at), np.bool_)  # the next candidate stands just after this one
    next_joined[:-1] = at[1:] - at[:-1] == 1
    previous_joined = np.roll(next_joined, 1)
    before_up = np.where(previous_joined, np.roll(own, 1), rest)
    after_up = np.where(next_joined, np.roll(own, -1), rest)
    kept = [at[own + NEIGHBOUR_WEIGHT * np.maximum(before_up, after_up) >= floor]]
    # A document beside a candidate, not one itself, is checked once beside each candidate it
    # touches: between two, it passes beside the stronger if it can pass at all.
    beside = rest + NEIGHBOUR_WEIGHT * own >= floor
    kept.append((at + 1)[beside & ~next_joined & (at + 1 < live)])
    kept.append((at - 1)[beside & ~previous_joined & (at > 0)])
    return _ascending_once(np.concatenate(kept))


def _final_scores(
    order: KeyOrder | None, terms: Sequence[BoundedTerm], kept: npt.NDArray[np.intp]
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float64]]:
    """The slots of the `kept` documents (ascending slots, or key-order positions) that match, and
    their rounded scores exactly as `scored_documents` computes them."""
    if order is None:
        return kept, np.round(exact_scores(terms, kept), SCORE_DIGITS)
    # Each one's score needs its neighbours' too.
    live = _live(order)
    scored = _ascending_once(np.concatenate((kept - 1, kept, kept + 1)))
    scored = scored[(scored >= 0) & (scored < live)]
    own = exact_scores(terms, _slots_at(order, scored))
    nearest = np.maximum(_at(scored, own, kept - 1), _at(scored, own, kept + 1))
    at, rescored = neighbour_scores(kept, _at(scored, own, kept), nearest)
    return _slots_at(order, at), rescored


def exact_scores(terms: Sequence[BoundedTerm], slots: npt.NDArray[np.intp]) -> npt.NDArray[np.float64]:
    """The raw scores of `slots` as `scored_documents` sums them: from 0.0, each term's
    contribution in query order (adding 0.0 for a term a document lacks changes nothing)."""
    wanted = slots.astype(np.int32)  # as the postings' slots: searching them then copies nothing
    scores = np.zeros(len(slots))
    for term in terms:
        at = np.searchsorted(term.slots, wanted)
        np.minimum(at, len(term.slots) - 1, out=at)
        scores += np.where(term.slots[at] == wanted, term.added[at], 0.0)
    return scores


def _ascending_once(values: npt.NDArray[np.intp]) -> npt.NDArray[np.intp]:
    """`values` sorted, each once (sorting small arrays: np.unique hashes, slower here)."""
    values = np.sort(values)
    if len(values) > 1:
        fresh = np.empty(len(values), np.bool_)
        fresh[0] = True
        np.not_equal(values[1:], values[:-1], out=fresh[1:])
        values = values[fresh]
    return values


def _at(
    positions: npt.NDArray[np.intp], values: npt.NDArray[np.float64], wanted: npt.NDArray[np.intp]
) -> npt.NDArray[np.float64]:
    """The value at each `wanted` position among the ascending `positions`, 0.0 where absent."""
    if len(positions) == 0:
        return np.zeros(len(wanted))
    at = np.searchsorted(positions, wanted)
    np.minimum(at, len(positions) - 1, out=at)
    return np.where(positions[at] == wanted, values[at], 0.0)


def _live(order: KeyOrder) -> int:
    return order.count if order.slots is None else len(order.slots)


def _slots_at(order: KeyOrder, positions: npt.NDArray[np.intp]) -> npt.NDArray[np.intp]:
    return positions if order.slots is None else order.slots[positions]
