"""Pruned ranking (search/_prune.py) returns exactly what scoring every document returns: the same
keys, the same rounded scores, the same ties (to the larger key), removed and excluded documents
never, and with the neighbour rule a matching hit gaining NEIGHBOUR_WEIGHT times its better live
neighbour's rounded score (search/_neighbours.py). Checked against a plain reference that sorts
every document, on random corpora with skewed term frequencies, near-ties, dead slots and keys out
of slot order."""

from __future__ import annotations

from unittest import mock

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from powercontext_runtime.search import _prune
from powercontext_runtime.search._bm25 import (
    SCORE_DIGITS,
    Documents,
    TermPostings,
    contributions,
    length_norms,
    term_gains,
)
from powercontext_runtime.search._neighbours import NEIGHBOUR_WEIGHT, key_order
from powercontext_runtime.search._prune import BoundedTerm, pruned_top, term_bound, top_documents

Weighted = list[tuple[TermPostings, np.ndarray]]


def reference(
    keys: np.ndarray, alive: np.ndarray, weighted: Weighted, limit: int, neighbours: bool
) -> list[tuple[int, float]]:
    """Every live document scored: contributions summed term by term in query order, rounded to
    9 digits; with neighbours, each matching one gains the weighted rounded score of the better of
    the live documents just before and after it by key; then sorted best first, larger key first."""
    raw = np.zeros(len(keys))
    for postings, added in weighted:
        raw[postings.slots] += added  # each document once per term: the same additions in query order
    live = np.flatnonzero(alive)
    rounded = np.round(raw[live], SCORE_DIGITS)
    final = rounded
    if neighbours:
        by_key = np.argsort(keys[live])
        line = rounded[by_key]
        near = np.zeros(len(line))
        near[:-1] = line[1:]
        near[1:] = np.maximum(near[1:], line[:-1])
        final = np.empty(len(live))
        final[by_key] = np.round(line + NEIGHBOUR_WEIGHT * near, SCORE_DIGITS)
    ranked = sorted(
        (-score, -key)
        for score, key, own in zip(final.tolist(), keys[live].tolist(), rounded.tolist(), strict=True)
        if own > 0.0
    )
    return [(-key, -score) for score, key in ranked[:limit]]


def documents_of(keys: np.ndarray, alive: np.ndarray, neighbours: bool, all_alive_as_none: bool) -> Documents:
    mask = None if all_alive_as_none and bool(alive.all()) else alive
    order = key_order(keys, alive) if neighbours else None
    return Documents(keys, np.ones(len(keys)), mask, order)


def bounded(weighted: Weighted) -> list[BoundedTerm]:
    terms = []
    for postings, added in weighted:
        bound = term_bound(postings.slots, added)
        assert bound is not None
        terms.append(BoundedTerm(postings.slots, added, bound))
    return terms


def random_documents(
    rng: np.random.Generator, count: int, spread: int, shuffled: float, dead: list[float]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Keys drawn from `spread` times as many, ascending with the slots or (with chance
    `shuffled`) not, a share of the slots dead drawn from `dead`, and BM25 length norms."""
    keys = np.sort(rng.choice(spread * count, count, replace=False)).astype(np.int64) + 1
    if rng.random() < shuffled:
        keys = rng.permutation(keys)
    alive = rng.random(count) > float(rng.choice(dead))
    norms = length_norms(rng.integers(1, 60, count).astype(np.float64), 20.0)
    return keys, alive, norms


def random_term(
    rng: np.random.Generator,
    slots: np.ndarray,
    norms: np.ndarray,
    tied: float,
    gains: list[float],
    weights: list[float],
) -> tuple[TermPostings, np.ndarray]:
    """A term on `slots`: real BM25 contributions or (with chance `tied`) near-equal ones."""
    postings = TermPostings(slots, rng.integers(1, 6, len(slots)).astype(np.float32))
    count = len(norms)
    weight = float(np.log(1.0 + (count - len(slots) + 0.5) / (len(slots) + 0.5)))
    if rng.random() < tied:
        return postings, contributions(rng.choice(gains, len(slots)), float(rng.choice(weights)))
    return postings, contributions(term_gains(postings, norms), weight)


def random_corpus(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, Weighted]:
    """A family of a few thousand documents: one common term in most of them, a few of middling
    frequency and a few rare ones (Zipf-like), real BM25 contributions or a handful of near-equal
    ones (ties), keys ascending with the slots or shuffled, and some slots dead."""
    count = int(rng.integers(2_000, 12_000))
    keys, alive, norms = random_documents(rng, count, 10, 0.4, [0.0, 0.05, 0.3])
    weighted: Weighted = []
    for rank in range(int(rng.integers(2, 9))):
        share = float(rng.choice([0.6, 0.3, 0.05, 0.01, 0.002])) if rank else float(rng.uniform(0.4, 0.9))
        df = max(1, int(count * share * rng.uniform(0.5, 1.5)))
        slots = np.sort(rng.choice(count, min(df, count), replace=False)).astype(np.int32)
        weighted.append(
            random_term(rng, slots, norms, 0.3, [1.0, 1.0 + 4e-10, 0.5, 2.0 - 3e-10, 0.75], [0.4, 1.3, 2.2])
        )
    rng.shuffle(weighted)  # type: ignore[arg-type]
    return keys, alive, weighted


def test_pruned_ranking_equals_scoring_every_document_on_random_families() -> None:
    rng = np.random.default_rng(20261206)
    pruned = 0
    cases = 160
    for case in range(cases):
        keys, alive, weighted = random_corpus(rng)
        neighbours = case % 2 == 0
        documents = documents_of(keys, alive, neighbours, all_alive_as_none=True)
        limit = int(rng.choice([1, 2, 3, 8, 16, 33, 64]))
        expected = reference(keys, alive, weighted, limit, neighbours)
        found = pruned_top(documents, bounded(weighted), limit)
        if found is not None:
            pruned += 1
            assert found == expected, case
        with mock.patch.object(_prune, "PRUNE_POSTINGS", 0), mock.patch.object(_prune, "PRUNE_LIMIT", 64):
            bounds = [term_bound(postings.slots, added) for postings, added in weighted]
            assert top_documents(documents, weighted, bounds, limit) == expected, case
    # The pruned path itself was checked, not only its fallback (51 of 160: it now declines up
    # front whatever its plan says would not pay).
    assert pruned >= cases // 4


# Contributions near each other and near rounding boundaries, so ties and near-ties are common.
ADDED = st.sampled_from([1.0, 1.0 + 4e-10, 1.0 + 6e-10, 0.5, 0.5 + 1e-12, 2.0 - 3e-10, 1e-10, 7.0])


@st.composite
def small_families(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, Weighted, int, bool]:
    count = draw(st.integers(min_value=1, max_value=60))
    keys = np.array(draw(st.permutations(range(1000, 1000 + count))), np.int64)
    if draw(st.booleans()):
        keys = np.sort(keys)
    alive = np.array(draw(st.lists(st.booleans(), min_size=count, max_size=count)), np.bool_)
    weighted: Weighted = []
    for _ in range(draw(st.integers(min_value=2, max_value=5))):
        slots = sorted(
            draw(st.sets(st.integers(min_value=0, max_value=count - 1), min_size=1, max_size=count))
        )
        added = np.array([draw(ADDED) for _ in slots], np.float64)
        weighted.append((TermPostings(np.array(slots, np.int32), np.ones(len(slots), np.float32)), added))
    return keys, alive, weighted, draw(st.integers(min_value=1, max_value=12)), draw(st.booleans())


@settings(max_examples=600, deadline=None)  # no timing: the machine may be busy
@given(family=small_families())
def test_pruned_ranking_of_small_families_with_many_ties(
    family: tuple[np.ndarray, np.ndarray, Weighted, int, bool],
) -> None:
    keys, alive, weighted, limit, neighbours = family
    documents = documents_of(keys, alive, neighbours, all_alive_as_none=False)
    # These families are far too small to pay.
    with mock.patch.object(_prune, "LOOKUP_COST", 0), mock.patch.object(_prune, "ESSENTIAL_SHARE", 0):
        found = pruned_top(documents, bounded(weighted), limit)
    if found is not None:
        assert found == reference(keys, alive, weighted, limit, neighbours)


def test_a_rare_term_decides_and_the_common_one_is_only_looked_up() -> None:
    """The case pruning is for: one rare word and one in every document. The common word's bound
    is below what the rare word's hits reach, so the pruned path answers, and exactly."""
    count = 50_000
    keys = np.arange(1, count + 1, dtype=np.int64)
    alive = np.ones(count, np.bool_)
    alive[::7] = False
    common = TermPostings(np.arange(count, dtype=np.int32), np.ones(count, np.float32))
    rare = TermPostings(np.arange(5, count, 997, dtype=np.int32), np.full(51, 2.0, np.float32))
    norms = length_norms(np.full(count, 10.0), 10.0)
    weighted = [
        (common, contributions(term_gains(common, norms), 0.01)),
        (rare, contributions(term_gains(rare, norms), 6.0)),
    ]
    for neighbours in (False, True):
        documents = documents_of(keys, alive, neighbours, all_alive_as_none=False)
        found = pruned_top(documents, bounded(weighted), 8)
        assert found is not None
        assert found == reference(keys, alive, weighted, 8, neighbours)


def test_postings_that_cannot_bound_a_term_are_not_pruned() -> None:
    """Pruning looks documents up in ascending slots and counts on positive contributions; a term
    whose postings are otherwise gets no bound and is scored whole."""
    added = np.array([1.0, 2.0, 3.0])
    assert term_bound(np.array([1, 4, 9], np.int32), added) == 3.0
    assert term_bound(np.array([4, 1, 9], np.int32), added) is None
    assert term_bound(np.array([1, 1, 9], np.int32), added) is None
    assert term_bound(np.array([1, 4, 9], np.int32), np.array([1.0, 0.0, 3.0])) is None
    assert term_bound(np.array([], np.int32), np.array([])) is None


def family(count: int, *terms: dict[int, float]) -> tuple[np.ndarray, np.ndarray, Weighted]:
    """Keys 1..count by slot, all alive, and terms given as {slot: contribution}."""
    weighted: Weighted = []
    for term in terms:
        slots = np.array(sorted(term), np.int32)
        added = np.array([term[slot] for slot in sorted(term)])
        weighted.append((TermPostings(slots, np.ones(len(slots), np.float32)), added))
    return np.arange(1, count + 1, dtype=np.int64), np.ones(count, np.bool_), weighted


def ranks_exactly(
    keys: np.ndarray, alive: np.ndarray, weighted: Weighted, limit: int, neighbours: bool
) -> None:
    documents = documents_of(keys, alive, neighbours, all_alive_as_none=True)
    expected = reference(keys, alive, weighted, limit, neighbours)
    # However little pruning would save.
    with mock.patch.object(_prune, "LOOKUP_COST", 0), mock.patch.object(_prune, "ESSENTIAL_SHARE", 0):
        assert pruned_top(documents, bounded(weighted), limit) in (None, expected)
    bounds = [term_bound(postings.slots, added) for postings, added in weighted]
    with mock.patch.object(_prune, "PRUNE_POSTINGS", 0), mock.patch.object(_prune, "PRUNE_LIMIT", 64):
        assert top_documents(documents, weighted, bounds, limit) == expected


def test_a_document_that_would_only_tie_is_not_pruned() -> None:
    """The rarer term's hits score 5; a document holding only the other term scores 5 too, or a
    hair less that still rounds to 5, and wins the tie by its larger key: no bound may rule it
    out by less than a rounding unit."""
    for other in (5.0, 5.0 - 3e-10):
        rare = {slot: 5.0 for slot in range(0, 40, 10)}
        common = {slot: other for slot in range(41, 200)}
        ranks_exactly(*family(200, rare, common), limit=4, neighbours=False)


def test_two_neighbours_holding_only_the_common_term_can_outrank_the_rare_one() -> None:
    """Each gains half the other's score (6 + 3 = 9 > 8), though 6 alone is below the rare
    term's 8: the bound of a document no candidate stands beside is 1.5 times the rest."""
    rare = {slot: 8.0 for slot in range(0, 300, 30)}
    common = {slot: 6.0 for slot in range(100, 400) if slot % 30 not in (29, 0, 1)}
    ranks_exactly(*family(400, rare, common), limit=5, neighbours=True)


def test_a_neighbour_that_does_not_match_sets_no_threshold() -> None:
    """Documents whose own score rounds to 0 do not match, however strong their neighbour: they
    must not count among the `limit` a threshold is taken from."""
    essential = {10: 10.0, 9: 1e-10, 11: 1e-10, 30: 1e-10, 31: 10.0, 32: 1e-10}
    common = {slot: 3.0 for slot in range(50, 60)}
    ranks_exactly(*family(60, essential, common), limit=4, neighbours=True)


def test_a_query_whose_plan_cannot_pay_reads_no_posting() -> None:
    """Five middling terms of near-equal bounds: only all but one together could rule the last
    out, and their postings are most of the query's. The pruned path declines from lengths and
    bounds alone, before reading a posting, so giving way costs nothing."""
    count = 50_000
    rng = np.random.default_rng(7)
    keys, alive = np.arange(1, count + 1, dtype=np.int64), np.ones(count, np.bool_)
    weighted: Weighted = []
    for share in (0.02, 0.03, 0.04, 0.05, 0.06):
        slots = np.sort(rng.choice(count, int(count * share), replace=False)).astype(np.int32)
        added = rng.uniform(1.0, 2.0, len(slots))
        weighted.append((TermPostings(slots, np.ones(len(slots), np.float32)), added))
    for neighbours in (False, True):
        documents = documents_of(keys, alive, neighbours, all_alive_as_none=True)
        with mock.patch.object(_prune, "_live_postings", side_effect=AssertionError("read")):
            assert pruned_top(documents, bounded(weighted), 8) is None
        bounds = [term_bound(postings.slots, added) for postings, added in weighted]
        assert top_documents(documents, weighted, bounds, 8) == reference(
            keys, alive, weighted, 8, neighbours
        )


def test_a_pruned_attempt_reads_a_small_share_of_the_postings_answer_or_not() -> None:
    """Whether it answers or gives way, the pruned path reads (sorts and merges) at most
    1/ESSENTIAL_SHARE of what scoring every document reads: a query that falls back to scoring
    everything has paid little for trying."""
    rng = np.random.default_rng(20261207)
    for case in range(60):
        keys, alive, weighted = random_corpus(rng)
        documents = documents_of(keys, alive, case % 2 == 0, all_alive_as_none=True)
        terms = bounded(weighted)
        read = mock.Mock(wraps=_prune._live_postings)
        with mock.patch.object(_prune, "_live_postings", read):
            found = pruned_top(documents, terms, int(rng.choice([1, 8, 16])))
        held = sum(len(call.args[1].slots) for call in read.call_args_list)
        everything = len(keys) + sum(len(term.slots) for term in terms)
        assert held * _prune.ESSENTIAL_SHARE <= everything, (case, found is None)
