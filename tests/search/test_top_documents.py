"""Search order (search/_bm25.py, scored_documents): BM25 sums rounded to 9 digits, best first, ties to
the larger key, removed documents never. The numpy path only rounds and sorts documents near the
limit-th score, and a plain-Python path ranks small inputs; both must agree with sorting
everything."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from powercontext_runtime.search import _bm25 as bm25
from powercontext_runtime.search._bm25 import (
    SCORE_DIGITS,
    Documents,
    TermPostings,
    contributions,
    scored_documents,
)

Weighted = list[tuple[TermPostings, np.ndarray]]

# Gains close to each other and to rounding boundaries, so ties and near-ties are common.
GAINS = st.sampled_from([1.0, 1.0 + 4e-10, 1.0 + 6e-10, 0.5, 0.5 + 1e-12, 2.0 - 3e-10, 1e-10])


@st.composite
def corpora(draw: st.DrawFn) -> tuple[Documents, Weighted, int]:
    count = draw(st.integers(min_value=1, max_value=40))
    keys = np.array(draw(st.permutations(range(1000, 1000 + count))), np.int64)
    alive = np.array(draw(st.lists(st.booleans(), min_size=count, max_size=count)), np.bool_)
    weighted = []
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        slots = sorted(draw(st.sets(st.integers(min_value=0, max_value=count - 1), max_size=count)))
        gains = np.array([draw(GAINS) for _ in slots], np.float64)
        postings = TermPostings(np.array(slots, np.int32), np.ones(len(slots), np.float32))
        weighted.append((postings, contributions(gains, draw(st.sampled_from([1.0, 0.3, 2.5])))))
    documents = Documents(keys, np.ones(count), alive if draw(st.booleans()) else None)
    return documents, weighted, draw(st.integers(min_value=1, max_value=12))


@pytest.mark.parametrize("path", ["python", "numpy"])
@settings(max_examples=500)
@given(corpus=corpora())
def test_both_ranking_paths_equal_sorting_every_document(
    path: str, corpus: tuple[Documents, Weighted, int]
) -> None:
    documents, weighted, limit = corpus
    scores = [0.0] * len(documents.keys)
    for postings, added in weighted:
        for slot, value in zip(postings.slots.tolist(), added.tolist(), strict=True):
            scores[slot] += value
    # numpy's rounding (scale, round half to even, unscale), which is what ranking defines.
    rounded = [float(np.round(score, SCORE_DIGITS)) for score in scores]
    ranked = sorted(
        (-score, -int(key))
        for slot, (score, key) in enumerate(zip(rounded, documents.keys.tolist(), strict=True))
        if (documents.alive is None or documents.alive[slot]) and score > 0
    )
    # These inputs are small: the plain-Python path takes them unless the threshold is lowered.
    small = 1_000_000 if path == "python" else -1
    with mock.patch.object(bm25, "_SMALL_POSTINGS", small):
        assert scored_documents(documents, weighted, limit) == [
            (-key, -score) for score, key in ranked[:limit]
        ]


def sort_everything(documents: Documents, weighted: Weighted, limit: int) -> list[tuple[int, float]]:
    """The definition without shortcuts: every document rounded and sorted."""
    scores = np.zeros(len(documents.keys))
    for postings, added in weighted:
        scores += np.bincount(postings.slots, weights=added, minlength=len(scores))
    if documents.alive is not None:
        scores *= documents.alive
    rounded = np.round(scores, SCORE_DIGITS)
    order = np.lexsort((-documents.keys, -rounded))
    return [(int(documents.keys[i]), float(rounded[i])) for i in order if rounded[i] > 0][:limit]


def test_sampled_floors_on_large_families_change_no_answer() -> None:
    rng = np.random.default_rng(20261202)
    for _ in range(60):
        count = int(rng.integers(500, 20000))
        documents = Documents(
            rng.permutation(count).astype(np.int64) + 1,
            np.ones(count),
            rng.random(count) > 0.1 if rng.random() < 0.5 else None,
        )
        weighted = []
        for _ in range(int(rng.integers(1, 8))):
            df = int(rng.integers(1, count))
            slots = np.sort(rng.choice(count, df, replace=False)).astype(np.int32)
            # Few distinct gains: many exact ties and near-ties around the limit-th score.
            gains = rng.choice([1.0, 1.0 + 4e-10, 0.5, 2.0 - 3e-10, 0.75], df)
            weight = float(rng.choice([0.4, 1.3, 2.2]))
            weighted.append((TermPostings(slots, np.ones(df, np.float32)), contributions(gains, weight)))
        limit = int(rng.choice([1, 2, 8, 16, 64]))
        assert scored_documents(documents, weighted, limit) == sort_everything(documents, weighted, limit)


def test_norms_and_gains_are_the_textbook_floats() -> None:
    """Worked out in place, BM25's length norms and saturated frequencies are still
    K1 * (1 - B + B * length / average) and tf * (K1 + 1) / (tf + norm) to the last bit, so
    scores (and so the order) cannot move."""
    rng = np.random.default_rng(11)
    for count in (1, 7, 5_000):
        lengths = rng.integers(1, 400, count).astype(np.float64)
        average = float(rng.uniform(5.0, 80.0))
        norms = bm25.length_norms(lengths, average)
        assert np.array_equal(norms, bm25.K1 * (1.0 - bm25.B + bm25.B * lengths / average))
        slots = np.sort(rng.choice(count, max(1, count // 3), replace=False)).astype(np.int32)
        tfs = rng.integers(1, 30, len(slots)).astype(np.float32)
        wide = tfs.astype(np.float64)
        expected = wide * (bm25.K1 + 1.0) / (wide + norms[slots])
        assert np.array_equal(bm25.term_gains(TermPostings(slots, tfs), norms), expected)
