"""The full-text index every backend keeps the same way, so every backend ranks the same way.

Each head document (a live Memory entry version, an approved Experience head, a topic head) is
stored as postings: (Scope, family, term, document, term frequency), with the document's length
and each Scope's totals; a term's document frequency is counted from its postings. Ranking is
Okapi BM25 over those numbers,
computed here in one vectorised function (`scored_documents`) whatever the database, rounded, with
ties broken by the newer document. SQLite and OceanBase therefore return the same order for the
same data, which their own full-text rankers would not. The store keeps the postings of the terms
queried so far in memory (`_mirror.py`), so a query costs a few array operations.

Terms: normalised, stemmed words (`_tokens.py`), and for Chinese, Japanese and Korean text each character and each pair
of adjacent characters, so `记忆` matches inside `记忆系统`. A query uses its words, its single CJK
characters, and the pairs of its longer CJK runs.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np
import numpy.typing as npt

from ._neighbours import NEIGHBOUR_WEIGHT, KeyOrder
from ._tokens import SearchQuery, index_tokens

# Okapi BM25; idf is Lucene's form, positive even for very common terms. k1 = 0.9 and b = 0.4 (the
# defaults of Anserini's BM25) beat the textbook 1.2 and 0.75 on LoCoMo's dev conversations:
# evidence recall@8 0.553 -> 0.565 (docs/evaluation.md); chosen there, never on the test split.
K1 = 0.9
B = 0.4
# Scores are compared after rounding, so float summation order cannot reorder near-equal results
# between database engines; equal rounded scores fall back to the newer document.
SCORE_DIGITS = 9
MAX_TERM_LENGTH = 64


def document_terms(text: str) -> Counter[str]:
    """Term frequencies of a document: words, CJK characters, and adjacent CJK pairs."""
    words, stretches = index_tokens(text)
    counts = word_terms(words)
    for stretch in stretches:
        counts.update(stretch)
        counts.update(map(str.__add__, stretch, stretch[1:]))
    return counts


def word_terms(words: Sequence[str]) -> Counter[str]:
    """Term frequencies of stemmed words, each cut to MAX_TERM_LENGTH."""
    counts = Counter(words)  # counted in C; a word over the limit is rare, so cut only then
    if max(map(len, counts), default=0) > MAX_TERM_LENGTH:
        counts = Counter(word[:MAX_TERM_LENGTH] for word in words)
    return counts


def query_terms(query: SearchQuery) -> list[str]:
    """The index terms a parsed query asks for (a CJK pair is one term here, not a phrase)."""
    return list(dict.fromkeys("".join(term)[:MAX_TERM_LENGTH] for term in query.terms))


def idf(documents: int, document_frequency: int) -> float:
    return math.log(1.0 + (documents - document_frequency + 0.5) / (document_frequency + 0.5))


def term_weights(
    terms: Sequence[str], frequencies: Mapping[str, int], documents: int
) -> list[tuple[str, float]]:
    """The idf of each query term that occurs in the family; absent terms cannot match."""
    return [(t, idf(documents, frequencies[t])) for t in terms if frequencies.get(t, 0) > 0]


@dataclass(frozen=True, slots=True)
class Documents:
    """A family's documents by slot: their keys, lengths, whether each is still a head (None:
    all are), and, where hits gain their neighbours' scores, the live slots' key order."""

    keys: npt.NDArray[np.int64]
    lengths: npt.NDArray[np.float64]
    alive: npt.NDArray[np.bool_] | None
    key_order: KeyOrder | None = None


@dataclass(frozen=True, slots=True)
class TermPostings:
    """One term's postings: document slots and term frequencies, in any order."""

    slots: npt.NDArray[np.int32]
    tfs: npt.NDArray[np.float32]


def length_norms(lengths: npt.NDArray[np.float64], average_length: float) -> npt.NDArray[np.float64]:
    """BM25's document-length normalisation, per document slot: K1 * (1 - B + B * length /
    average), in place in one array (worked out again for every document after each write)."""
    norms = lengths * B
    norms /= average_length
    norms += 1.0 - B
    norms *= K1
    return norms


def term_gains(postings: TermPostings, norms: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """BM25's saturated term frequency, per posting, before the term's idf weight:
    tf * (K1 + 1) / (tf + norm), worked out in place in two arrays (a common word's million
    postings are worked out again after every write)."""
    denominators = norms[postings.slots]
    gains = postings.tfs.astype(np.float64)
    denominators += gains
    gains *= K1 + 1.0
    gains /= denominators
    return gains


def contributions(gains: npt.NDArray[np.float64], weight: float) -> npt.NDArray[np.float64]:
    """What each posting adds to its document's score: the term's idf times its gain."""
    return weight * gains


# Documents per sampled score when looking for a floor below the limit-th score.
_SAMPLE_STRIDE = 64
# Up to this many postings, plain Python ranks faster than numpy's per-call overhead allows.
_SMALL_POSTINGS = 256
_SCALE = 10.0**SCORE_DIGITS
# The least positive score: a floor no matching document is below.
_LEAST = float(np.nextafter(0.0, 1.0))


def _score_floor(scores: npt.NDArray[np.float64], limit: int) -> float:
    """A score no document in the top `limit` can be below, so only documents at or above it need
    rounding and sorting. The limit-th best of every 64th score cannot exceed the limit-th best of
    them all; 1e-9 below it leaves room for rounding (a raw score further below rounds strictly
    lower). Without enough sampled matches, every match is kept."""
    return _sample_floor(scores[::_SAMPLE_STRIDE], limit, 1e-9)


def _sample_floor(sample: npt.NDArray[np.float64], limit: int, margin: float) -> float:
    """`margin` below the limit-th best of `sample` (scores of candidates), or the least positive
    float when it holds too few."""
    if sample.size <= limit:
        return _LEAST
    kth = float(np.partition(sample, sample.size - limit)[sample.size - limit]) - margin
    return kth if kth > 0.0 else _LEAST


def scored_documents(
    documents: Documents,
    weighted: Sequence[tuple[TermPostings, npt.NDArray[np.float64]]],
    limit: int,
) -> list[tuple[int, float]]:
    """(key, score) of the `limit` best live documents, best first; ties go to the larger key.

    The score is the rounded sum the order compares, so search answers it the same on every backend.
    `weighted` holds each matching query term's postings and their `contributions`, in query
    order. Every backend ranks through this one function, so the order cannot differ between
    them. Each score is float64 summed term by term in query order; scores are rounded as numpy
    rounds (scale by 10**9, round half to even, unscale) before comparing, so near-equal sums
    still order by key. Small inputs take a plain-Python path that computes the same floats.
    """
    count = len(documents.keys)
    if count == 0 or not weighted:
        return []
    postings_count = sum(len(postings.slots) for postings, _ in weighted)
    if postings_count <= _SMALL_POSTINGS:
        return _top_few(documents, weighted, limit)
    scores = _summed(weighted, count, postings_count)
    if documents.key_order is None:
        if documents.alive is not None:
            scores *= documents.alive  # removed documents score 0 and drop out below
        matched = np.flatnonzero(scores >= _score_floor(scores, limit))
        rounded = np.round(scores[matched], SCORE_DIGITS)
    else:
        # The key order holds live documents only, so removed ones never come up.
        matched, rounded = _with_neighbours(scores, documents.key_order, limit)
    return best_of(documents.keys, matched, rounded, limit)


# Up to this many postings, one weighted bincount of them all is the quickest sum; past it, copying
# them into one array costs more than adding term by term (at 16,384 its float64 copy is 128 KiB,
# malloc's threshold for mapping fresh pages, so every query would fault them in).
_CONCATENATED_POSTINGS = 16_384


def _summed(
    weighted: Sequence[tuple[TermPostings, npt.NDArray[np.float64]]], count: int, postings_count: int
) -> npt.NDArray[np.float64]:
    """Each document's raw score: its contributions added term by term in query order (0.0 + the
    first term's + the next ...); both ways add the same floats in the same order."""
    if postings_count <= _CONCATENATED_POSTINGS:
        # With weights, bincount sums float64 (its stubs only know the integer form).
        return cast(
            "npt.NDArray[np.float64]",
            np.bincount(
                np.concatenate([postings.slots for postings, _ in weighted]),
                weights=np.concatenate([added for _, added in weighted]),
                minlength=count,
            ),
        )
    scores = np.zeros(count)
    for postings, added in weighted:
        np.add.at(scores, postings.slots, added)
    return scores


def best_of(
    keys: npt.NDArray[np.int64], matched: npt.NDArray[np.intp], rounded: npt.NDArray[np.float64], limit: int
) -> list[tuple[int, float]]:
    """(key, score) of the `limit` best of the `matched` slots by their `rounded` scores, best first,
    ties to the larger key; a score of 0 never ranks."""
    positive = rounded > 0.0
    if not positive.all():
        matched, rounded = matched[positive], rounded[positive]
    if matched.size > limit:
        # Keep everything tied with the limit-th score, then let the key order decide among them.
        cut = matched.size - limit
        kept = rounded >= np.partition(rounded, cut)[cut]
        matched, rounded = matched[kept], rounded[kept]
    found = keys[matched]
    order = np.lexsort((-found, -rounded))[:limit]
    return list(zip(found[order].tolist(), rounded[order].tolist(), strict=True))


# How far a hit's unrounded score plus its neighbour's share can lie from the rounded one the
# order compares: half a unit of the last digit for its own score's rounding, a quarter for the
# neighbour's, a half for the sum's; the floor leaves twice that, so no top hit falls below it.
_NEIGHBOUR_MARGIN = 3e-9
# The rescored floor samples every 16th document: only matching ones count, and rounding the
# fewer documents past a closer floor saves more than the denser sample costs.
_NEIGHBOUR_STRIDE = 16


def _with_neighbours(
    scores: npt.NDArray[np.float64], order: KeyOrder, limit: int
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float64]]:
    """The slots that can rank among the `limit` best once every matching document has gained
    `NEIGHBOUR_WEIGHT` times its better neighbour's rounded score, and those rescored scores.
    Only documents whose unrounded rescored sum reaches a floor taken from a sample are
    rescored exactly; in a large family, only those near a high score are even summed."""
    own = scores if order.slots is None else scores.take(order.slots)
    if own.size < _SPARSE_DOCUMENTS:
        at, near = _reaching_everywhere(own, limit)
    else:
        at, near = _reaching_near_high(own, limit)
    at, rescored = neighbour_scores(at, own[at], near)
    slots = at if order.slots is None else order.slots[at]
    return slots, rescored


# From this many documents on, the floor is sampled in runs and, when fewer than one document in
# _SPARSE_SHARE scores high enough to matter, only those and the ones beside them are summed:
# at a million documents some ten thousand, against four passes over all of them.
_SPARSE_DOCUMENTS = 65_536
_SPARSE_SHARE = 8
# Sampled documents per run: one in _NEIGHBOUR_STRIDE sampled, in runs read one after another (a
# strided sample reads as much memory as the whole line).
_RUN_SAMPLE = 256


def _reaching_everywhere(
    own: npt.NDArray[np.float64], limit: int, floor: float | None = None
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float64]]:
    """The places in `own` whose unrounded rescored sum reaches a floor under the `limit`-th best
    (sampled from every _NEIGHBOUR_STRIDE-th sum unless given), ascending, with their better
    neighbours' raw scores: whole-array steps."""
    nearest = _better_neighbour(own)
    rough = nearest * NEIGHBOUR_WEIGHT
    rough += own
    if floor is None:
        sampled = own[::_NEIGHBOUR_STRIDE]
        sample = rough[::_NEIGHBOUR_STRIDE][_matching(sampled)]
        floor = _sample_floor(sample, limit, _NEIGHBOUR_MARGIN)
    at = np.flatnonzero(rough >= floor)
    return at, nearest[at]


def _reaching_near_high(
    own: npt.NDArray[np.float64], limit: int
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float64]]:
    """`_reaching_everywhere` for a large family, summing only around the high scores."""
    floor = _sample_floor(_run_sums(own), limit, _NEIGHBOUR_MARGIN)
    # A sum is own + w * nearest, so with both below floor / (1 + w) it is below the floor: only
    # a document at or above that, or beside one, can reach it.
    cut = max(floor / (1.0 + NEIGHBOUR_WEIGHT) - _NEIGHBOUR_MARGIN, _LEAST)
    high = np.flatnonzero(own >= cut)
    if high.size * _SPARSE_SHARE > own.size:
        return _reaching_everywhere(own, limit, floor)
    around = np.concatenate([high - 1, high, high + 1])
    around = around[(around >= 0) & (around < own.size)]
    near = _nearest(own, around)
    rough = near * NEIGHBOUR_WEIGHT
    rough += own[around]
    reach = rough >= floor
    at, first = np.unique(around[reach], return_index=True)
    return at, near[reach][first]


def _run_sums(own: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Unrounded rescored sums of one in every _NEIGHBOUR_STRIDE documents, in runs of
    _RUN_SAMPLE spread evenly over `own`, matching ones only (one that does not match cannot
    rank)."""
    width = _RUN_SAMPLE * _NEIGHBOUR_STRIDE
    runs = own[: own.size // width * width].reshape(-1, width)
    mine = runs[:, 1 : _RUN_SAMPLE + 1]
    sums = np.maximum(runs[:, :_RUN_SAMPLE], runs[:, 2 : _RUN_SAMPLE + 2])
    sums *= NEIGHBOUR_WEIGHT
    sums += mine
    matching: npt.NDArray[np.float64] = sums[_matching(mine)]
    return matching


def _matching(own: npt.NDArray[np.float64]) -> npt.NDArray[np.bool_]:
    """Which raw scores match: they round above 0 (numpy rounds x * 10**9 = 0.5 to 0). A floor
    comes from matching documents only, since one that does not match cannot rank, however
    strong its neighbour."""
    return own * _SCALE > 0.5


def _nearest(line: npt.NDArray[np.float64], at: npt.NDArray[np.intp]) -> npt.NDArray[np.float64]:
    """`_better_neighbour(line)[at]`, reading only the documents beside `at`."""
    before = line.take(at - 1, mode="wrap")
    before[at == 0] = 0.0
    after = line.take(at + 1, mode="wrap")
    after[at == line.size - 1] = 0.0
    return np.maximum(before, after, out=before)


def neighbour_scores(
    at: npt.NDArray[np.intp], own: npt.NDArray[np.float64], nearest: npt.NDArray[np.float64]
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float64]]:
    """The documents `at` that match (their `own` raw score rounds above 0; numpy rounds
    x * 10**9 = 0.5 to 0) with their rounded scores once each gains NEIGHBOUR_WEIGHT times the
    rounded raw score `nearest` of its better neighbour."""
    matching = _matching(own)
    mine = _rounded(own[matching])
    # Rounding keeps order, so the rounded better neighbour is the better rounded neighbour.
    return at[matching], _rounded(mine + NEIGHBOUR_WEIGHT * _rounded(nearest[matching]))


def _better_neighbour(line: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """For each score in `line`, the larger of those beside it (0 beyond either end)."""
    nearest = np.zeros_like(line)
    if len(line) > 1:
        np.maximum(line[:-2], line[2:], out=nearest[1:-1])
        nearest[0], nearest[-1] = line[1], line[-2]
    return nearest


def _rounded(values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """`np.round(values, SCORE_DIGITS)` as numpy computes it (scale, round half to even, unscale),
    in place on a fresh array and without its Python wrapper's cost."""
    scaled = values * _SCALE
    np.rint(scaled, out=scaled)
    scaled /= _SCALE
    return scaled


def _top_few(
    documents: Documents,
    weighted: Sequence[tuple[TermPostings, npt.NDArray[np.float64]]],
    limit: int,
) -> list[tuple[int, float]]:
    """`scored_documents` for a few postings: the same additions in the same order (0.0 + the first
    term's contribution + the next ...), and numpy's rounding, with Python floats."""
    scores: dict[int, float] = {}
    for postings, added in weighted:
        for slot, value in zip(postings.slots.tolist(), added.tolist(), strict=True):
            scores[slot] = scores.get(slot, 0.0) + value
    alive = documents.alive
    rounded_of = {slot: round(score * _SCALE) / _SCALE for slot, score in scores.items()}
    if alive is not None:
        rounded_of = {slot: score for slot, score in rounded_of.items() if alive[slot]}
    keys = documents.keys
    order = documents.key_order
    ranked = []
    score_of = rounded_of.get
    for slot, rounded in rounded_of.items():
        if rounded <= 0.0:
            continue
        if order is not None:
            # In slot order (the usual case) slot ± 1 are the neighbours; -1 and `count` score none.
            before, after = (slot - 1, slot + 1) if order.slots is None else order.beside(slot)
            near = max(score_of(before, 0.0), score_of(after, 0.0))
            rounded = round((rounded + NEIGHBOUR_WEIGHT * near) * _SCALE) / _SCALE
        ranked.append((-rounded, -int(keys[slot])))
    ranked.sort()
    return [(-key, -score) for score, key in ranked[:limit]]
