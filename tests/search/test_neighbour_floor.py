"""Ranking with Memory's neighbour rule in a large family (search/_bm25.py): the floor comes from
runs of sampled documents, and when few documents score high enough to matter only they and the
documents beside them are summed. The answer must still be exactly what scoring and sorting every
document gives: the same keys, rounded scores and ties, dead documents never."""

from __future__ import annotations

import contextlib
from unittest import mock

import numpy as np
from hypothesis import given, settings

from powercontext_runtime.search import _bm25
from powercontext_runtime.search._bm25 import scored_documents

from .test_pruned_ranking import (
    Weighted,
    documents_of,
    random_documents,
    random_term,
    reference,
    small_families,
)
from .test_pruned_ranking import family as family_of


def large_family(rng: np.random.Generator, shares: list[float]) -> tuple[np.ndarray, np.ndarray, Weighted]:
    """Past the size where the sparse path starts: keys ascending or shuffled, some dead, one
    term per share with real BM25 contributions or a few near-equal ones (near-ties)."""
    count = int(rng.integers(_bm25._SPARSE_DOCUMENTS, 2 * _bm25._SPARSE_DOCUMENTS))
    keys, alive, norms = random_documents(rng, count, 4, 0.3, [0.0, 0.001, 0.2])
    weighted: Weighted = [
        random_term(
            rng,
            np.flatnonzero(rng.random(count) < share).astype(np.int32),
            norms,
            0.25,
            [1.0, 1.0 + 4e-10, 0.5, 2.0 - 3e-10],
            [0.4, 1.3],
        )
        for share in shares
    ]
    return keys, alive, weighted


def test_large_families_rank_as_scoring_every_document() -> None:
    rng = np.random.default_rng(20261207)
    queries = [
        [0.5, 0.3, 0.2, 0.05],  # common words only: the usual query at a million
        [0.6, 0.01, 0.0005],  # a rare word beside common ones
        [0.0003],  # few matches: too few sampled for a floor
        [0.9],  # one word nearly everywhere, scores alike: most documents matter
        [0.4, 0.4, 0.4, 0.4, 0.4, 0.4],
    ]
    summed_everything = 0
    for case in range(15):
        keys, alive, weighted = large_family(rng, queries[case % len(queries)])
        documents = documents_of(keys, alive, neighbours=True, all_alive_as_none=True)
        limit = int(rng.choice([1, 3, 8, 16, 64]))
        with mock.patch.object(_bm25, "_better_neighbour", wraps=_bm25._better_neighbour) as dense:
            assert scored_documents(documents, weighted, limit) == reference(
                keys, alive, weighted, limit, neighbours=True
            ), case
        summed_everything += dense.call_count
    # Both ways were taken: near high scores only, and every document when most of them matter.
    assert 0 < summed_everything < 15


@settings(max_examples=400, deadline=None)  # no timing: the machine may be busy
@given(family=small_families())
def test_the_sparse_path_on_small_families_with_many_ties(
    family: tuple[np.ndarray, np.ndarray, Weighted, int, bool],
) -> None:
    """The sparse path forced onto tiny families, with every other document sampled (in runs of
    two), so its floor is close and documents below the cut but beside a high score matter; ties,
    near-ties, family edges and dead neighbours are common here."""
    keys, alive, weighted, limit, _ = family
    documents = documents_of(keys, alive, neighbours=True, all_alive_as_none=False)
    with (
        mock.patch.object(_bm25, "_SPARSE_DOCUMENTS", 0),
        mock.patch.object(_bm25, "_SPARSE_SHARE", 0),
        mock.patch.object(_bm25, "_NEIGHBOUR_STRIDE", 2),
        mock.patch.object(_bm25, "_RUN_SAMPLE", 2),
        mock.patch.object(_bm25, "_SMALL_POSTINGS", 0),
        mock.patch.object(_bm25, "_better_neighbour", side_effect=AssertionError("summed everything")),
    ):
        found = scored_documents(documents, weighted, limit)
    assert found == reference(keys, alive, weighted, limit, neighbours=True)


def test_a_sampled_document_that_does_not_match_sets_no_floor() -> None:
    """A document whose own score rounds to 0 does not match, however strong its neighbour, so
    its rescored sum must not count towards the floor: here two such documents beside a 10 would
    have set it near 5 and left out the 1.0 that ranks second. Both ways of summing, with every
    other document sampled."""
    tiny = 1e-10
    ways = {
        "everywhere": ({1: 10.0, 0: tiny, 2: tiny, 6: 1.0}, {}),
        "near high scores": (
            {2: 10.0, 1: tiny, 3: tiny, 6: 1.0},
            {"_SPARSE_DOCUMENTS": 0, "_SPARSE_SHARE": 0, "_RUN_SAMPLE": 2},
        ),
    }
    for way, (term, patches) in ways.items():
        keys, alive, weighted = family_of(8, term)
        documents = documents_of(keys, alive, neighbours=True, all_alive_as_none=True)
        with contextlib.ExitStack() as stack:
            for name, value in {"_NEIGHBOUR_STRIDE": 2, "_SMALL_POSTINGS": 0, **patches}.items():
                stack.enter_context(mock.patch.object(_bm25, name, value))
            found = scored_documents(documents, weighted, 2)
        assert found == reference(keys, alive, weighted, 2, neighbours=True), way
        assert [key for key, _ in found] == [max(term, key=term.__getitem__) + 1, 7], way
