"""Reciprocal-rank fusion and the pool's round-robin shares (pure functions)."""

from __future__ import annotations

from powercontext_runtime.vectors import fuse, round_robin_shares


def test_a_key_both_legs_rank_comes_first_and_ties_keep_the_lexical_order() -> None:
    fused = [key for key, _ in fuse([10, 11, 12], [12, 20, 10], limit=5, k=60)]
    assert fused[:2] == [10, 12]  # in both lists; 10 ranks higher lexically than 12 semantically
    # 11 (lexical 2nd) and 20 (vector 2nd) score alike: the lexical hit first.
    assert fused[2:] == [11, 20]


def test_one_leg_alone_keeps_its_order_and_the_limit_cuts() -> None:
    assert [key for key, _ in fuse([], [5, 9], limit=2)] == [5, 9]
    assert [key for key, _ in fuse([7], [3], limit=2)] == [7, 3]
    assert [key for key, _ in fuse([3], [7], limit=1)] == [3]


def test_round_robin_shares_stop_at_the_cap() -> None:
    assert round_robin_shares([16, 16], 16) == [8, 8]
    assert round_robin_shares([3, 16, 0], 16) == [3, 13, 0]
    assert round_robin_shares([5, 2], None) == [5, 2]
