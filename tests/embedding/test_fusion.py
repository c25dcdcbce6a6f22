"""Fusion of the lexical ranking with the vectors' cosines, and the pool's round-robin shares (pure
functions), and the cosines a Scope's held vectors give fusion."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from powercontext_runtime.vectors import VECTOR_WEIGHT, Cosines, fuse, round_robin_shares
from powercontext_runtime.vectors.scope_index import _nearest, _ScopeVectors


def cosines(
    lexical: list[tuple[int, float]], by_key: dict[int, float], mean: float = 0.0, spread: float = 0.1
) -> Cosines:
    """The Cosines of vectors `by_key` for the `lexical` hits (all of them nearest: depth 64)."""
    nearest = sorted(by_key.items(), key=lambda item: (-item[1], -item[0]))[:64]
    return Cosines(
        np.asarray([key for key, _ in nearest], dtype=np.int64),
        np.asarray([value for _, value in nearest], dtype=np.float64),
        np.asarray([by_key.get(key, np.nan) for key, _ in lexical], dtype=np.float64),
        mean,
        spread,
    )


def keys(fused: list[tuple[int, float]]) -> list[int]:
    return [key for key, _ in fused]


def test_without_vectors_the_lexical_ranking_stands_as_shares_of_its_best() -> None:
    fused = fuse([(3, 8.0), (1, 4.0), (2, 2.0)], Cosines.absent(3), limit=5)
    assert fused == [(3, 1.0), (1, 0.5), (2, 0.25)]


def test_a_hit_the_vectors_find_near_moves_up_past_a_slightly_better_lexical_one() -> None:
    lexical = [(10, 9.0), (11, 8.5), (12, 1.0)]
    # 11 lies 2 standard deviations above the Scope's mean cosine, 10 at the mean.
    fused = fuse(lexical, cosines(lexical, {10: 0.1, 11: 0.3}, mean=0.1, spread=0.1), limit=3, weight=0.18)
    assert keys(fused) == [11, 10, 12]
    assert fused[0][1] == pytest.approx(8.5 / 9.0 + 0.18 * 2)


def test_a_hit_only_the_vectors_find_is_ranked_by_its_cosine_alone() -> None:
    lexical = [(1, 5.0), (2, 0.5)]
    near = {7: 0.9, 8: 0.35, 1: 0.1}  # 7 is 8 deviations above the mean, 8 1.5
    fused = fuse(lexical, cosines(lexical, near, mean=0.2, spread=0.1), limit=4, weight=0.2)
    assert keys(fused) == [7, 1, 8, 2]
    assert dict(fused)[8] == pytest.approx(0.2 * 1.5)


def test_a_cosine_below_the_mean_takes_nothing_away() -> None:
    lexical = [(1, 4.0), (2, 3.0)]
    fused = fuse(lexical, cosines(lexical, {1: -0.5, 2: 0.0}, mean=0.05, spread=0.1), limit=2)
    assert fused == [(1, 1.0), (2, 0.75)]


def test_equal_scores_keep_the_lexical_order_then_the_newer_key() -> None:
    lexical = [(4, 2.0), (9, 2.0)]
    assert keys(fuse(lexical, Cosines.absent(2), limit=2)) == [4, 9]
    # Two hits only the vectors find, at the same cosine: the newer (higher key) first.
    fused = fuse([], cosines([], {5: 0.5, 6: 0.5}, mean=0.0, spread=0.25), limit=2)
    assert keys(fused) == [6, 5]


def test_a_key_the_vectors_lack_adds_nothing_for_them() -> None:
    # 2 has no vector yet: found lexically, as before the leg.
    lexical = [(1, 2.0), (2, 1.0)]
    fused = fuse(lexical, cosines(lexical, {1: 0.1}, mean=0.1, spread=0.1), limit=2)
    assert fused == [(1, 1.0), (2, 0.5)]


scores = st.floats(min_value=0.01, max_value=100, allow_nan=False)
# Cosines on a grid: two that differ do so by far more than rounding, so stretching and shifting
# them cannot make them equal (cosines 1e-17 apart, which a shift of 0.4 rounds to one value, made the
# property false, not the fusion wrong).
similarities = st.integers(-1000, 1000).map(lambda n: n / 1000)


@given(
    lexical_scores=st.dictionaries(st.integers(0, 40), scores, max_size=20),
    vector_cosines=st.dictionaries(st.integers(0, 40), similarities, max_size=20),
    scale=st.sampled_from([0.5, 3.0, 40.0]),
    stretch=st.sampled_from([0.5, 2.0]),
    shift=st.sampled_from([-0.3, 0.0, 0.4]),
    limit=st.integers(1, 30),
)
def test_the_order_is_in_no_leg_s_units(
    lexical_scores: dict[int, float],
    vector_cosines: dict[int, float],
    scale: float,
    stretch: float,
    shift: float,
    limit: int,
) -> None:
    """BM25 scaled by any factor, cosines stretched and shifted (another model's band) with their
    mean and spread: the same order. Scores are never negative, come best first, and a smaller
    limit gives a prefix."""
    lexical = sorted(lexical_scores.items(), key=lambda item: (-item[1], -item[0]))
    values = list(vector_cosines.values())
    mean, spread = (float(np.mean(values)), float(np.std(values))) if values else (0.0, 0.0)
    fused = fuse(lexical, cosines(lexical, vector_cosines, mean, spread), limit)
    assert fused == _fused_step_by_step(lexical, vector_cosines, mean, spread, limit, VECTOR_WEIGHT)
    assert all(score >= 0 for _, score in fused)
    assert [score for _, score in fused] == sorted((score for _, score in fused), reverse=True)
    assert len(fused) == min(limit, len(set(lexical_scores) | set(vector_cosines)))
    assert keys(fuse(lexical, cosines(lexical, vector_cosines, mean, spread), limit + 5))[:limit] == keys(
        fused
    )
    rescaled = [(key, score * scale) for key, score in lexical]
    moved = {key: value * stretch + shift for key, value in vector_cosines.items()}
    other = fuse(rescaled, cosines(rescaled, moved, mean * stretch + shift, spread * stretch), limit)
    # Equal up to rounding: the orders where the fused scores are not near-ties.
    _assert_same_order_but_near_ties(fused, other)
    _assert_same_order_but_near_ties(other, fused)


def _fused_step_by_step(
    lexical: list[tuple[int, float]],
    by_key: dict[int, float],
    mean: float,
    spread: float,
    limit: int,
    weight: float,
) -> list[tuple[int, float]]:
    """The fusion as its docstring reads, one key at a time (every vector is among the nearest)."""
    best = lexical[0][1] if lexical else 0.0
    scores = {key: score / best for key, score in lexical}
    for key in by_key:
        scores.setdefault(key, 0.0)
    if spread > 0:
        for key in scores:
            if key in by_key and (by_key[key] - mean) / spread > 0:
                scores[key] += weight * ((by_key[key] - mean) / spread)
    rank = {key: i for i, (key, _) in enumerate(lexical)}
    order = sorted(scores, key=lambda key: (-scores[key], rank.get(key, len(lexical)), -key))
    return [(key, scores[key]) for key in order[:limit]]


def _assert_same_order_but_near_ties(fused: list[tuple[int, float]], other: list[tuple[int, float]]) -> None:
    """Every two keys of `fused` whose scores lie more than 1e-6 apart come in the same order in
    `other`, and every key scoring that far above `fused`'s last is in `other` too. (Grouping
    scores by a fixed gap instead failed when rounding put one gap on either side of it.)"""
    where = {key: at for at, (key, _) in enumerate(other)}
    last = fused[-1][1] if fused else 0.0
    for at, (key, score) in enumerate(fused):
        assert key in where or score <= last + 1e-6
        for later, later_score in fused[at + 1 :]:
            if score - later_score > 1e-6 and key in where and later in where:
                assert where[key] < where[later]


def test_the_held_copy_finds_any_keys_cosines_in_any_row_order() -> None:
    document_keys = np.asarray([40, 7, 19, 3, 88], dtype=np.int64)
    matrix = np.eye(5, dtype=np.float32)
    held = _ScopeVectors.holding((0, 0, 0), document_keys, matrix)
    query = np.asarray([0.4, 0.7, 0.19, 0.3, 0.88], dtype=np.float32)
    found = held.cosines(query, 2, [88, 3, 5, 100, 0, 7], ()).lexical
    expected = [np.float32(0.88), np.float32(0.3), np.nan, np.nan, np.nan, np.float32(0.7)]
    np.testing.assert_array_equal(found, np.asarray(expected, dtype=np.float64))
    assert len(held.cosines(query, 2, [], ()).lexical) == 0


def test_the_nearest_are_cut_at_the_depth_newer_first_on_ties() -> None:
    similarity = np.asarray([0.5, 0.9, 0.5, 0.1, 0.5])
    document_keys = np.asarray([1, 2, 3, 4, 5], dtype=np.int64)
    assert _nearest(similarity, document_keys, 3)[0].tolist() == [2, 5, 3]
    nearest_keys, nearest = _nearest(similarity, document_keys, 10)
    assert nearest_keys.tolist() == [2, 5, 3, 1, 4]
    assert nearest.tolist() == [0.9, 0.5, 0.5, 0.5, 0.1]


def test_round_robin_shares_stop_at_the_cap() -> None:
    assert round_robin_shares([16, 16], 16) == [8, 8]
    assert round_robin_shares([3, 16, 0], 16) == [3, 13, 0]
    assert round_robin_shares([5, 2], None) == [5, 2]
