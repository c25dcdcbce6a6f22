"""The vector leg's integer first pass (`vectors/screen.py`): its bound holds, and the nearest it
lets through, scored exactly, are exactly what scoring every row gives (RFC-free: issue #32's
"exact cosine over stored vectors")."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
from hypothesis import given, settings
from hypothesis import strategies as st

from powercontext_runtime.vectors.leg import unit
from powercontext_runtime.vectors.scope_index import _ScopeVectors
from powercontext_runtime.vectors.screen import Screen, exact

KINDS = ("gaussian", "outlier", "tiny", "flat", "near-duplicates", "duplicates", "zeros")


def rows_of(kind: str, count: int, dims: int, rng: np.random.Generator) -> npt.NDArray[np.float32]:
    """Unit rows of one hard kind for rounding to int8."""
    if kind == "outlier":  # one large component squeezes the others into a few steps
        found = rng.standard_normal((count, dims)) * 0.01
        found[:, 0] = 1.0
    elif kind == "tiny":
        found = rng.standard_normal((count, dims)) * 1e-30
    elif kind == "flat":  # every component the same size: a whole step's rounding on each
        found = rng.choice([-1.0, 1.0], size=(count, dims)) + rng.uniform(-0.004, 0.004, (count, dims))
    elif kind in {"near-duplicates", "duplicates"}:  # ties in the estimates, and true ties
        base = rng.standard_normal((max(1, count // 4), dims))
        found = base[rng.integers(0, len(base), count)]
        if kind == "near-duplicates":
            found = found + rng.standard_normal(found.shape) * 1e-5
    elif kind == "zeros":
        found = rng.standard_normal((count, dims))
        found[rng.random(count) < 0.3] = 0.0
    else:
        found = rng.standard_normal((count, dims))
    return unit(found.astype(np.float32))


def exhaustive(
    held: _ScopeVectors, query: npt.NDArray[np.float32], depth: int, excluded: set[int]
) -> tuple[list[int], list[float]]:
    """Every row scored exactly, ordered by cosine, then the newer key first, cut at `depth`."""
    scored = [
        (float(cosine), int(key))
        for key, cosine in zip(held.document_keys, exact(held.matrix, query), strict=True)
        if int(key) not in excluded
    ]
    scored.sort(key=lambda item: (-item[0], -item[1]))
    return [key for _, key in scored[:depth]], [cosine for cosine, _ in scored[:depth]]


@settings(max_examples=300, deadline=None)
@given(
    kind=st.sampled_from(KINDS),
    count=st.integers(1, 60),
    dims=st.sampled_from([1, 2, 7, 64, 384, 768]),
    seed=st.integers(0, 2**32 - 1),
)
def test_every_estimate_lies_within_its_bound_of_the_exact_cosine(
    kind: str, count: int, dims: int, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    rows = rows_of(kind, count, dims, rng)
    query = rows_of(rng.choice(KINDS[:4]), 1, dims, rng)[0]
    estimates = Screen.of(rows).estimates(query)
    assert (np.abs(estimates.cosines - exact(rows, query)) <= estimates.error).all()


@settings(max_examples=300, deadline=None)
@given(
    kind=st.sampled_from(KINDS),
    count=st.integers(1, 400),
    dims=st.sampled_from([1, 3, 16, 48]),
    depth=st.integers(1, 70),
    seed=st.integers(0, 2**32 - 1),
    excluded_share=st.sampled_from([0.0, 0.1, 0.9, 1.0]),
)
def test_the_screened_nearest_are_exactly_the_exhaustive_ranking(
    kind: str, count: int, dims: int, depth: int, seed: int, excluded_share: float
) -> None:
    rng = np.random.default_rng(seed)
    matrix = rows_of(kind, count, dims, rng)
    keys = rng.permutation(np.arange(10, 10 + 3 * count, 3, dtype=np.int64))  # any order
    held = _ScopeVectors((0, 0, 0), keys, matrix, Screen.of(matrix))
    query = rows_of("gaussian", 1, dims, rng)[0] if kind != "duplicates" else matrix[0]
    excluded = {int(key) for key in keys if rng.random() < excluded_share}
    asked = [int(key) for key in rng.choice(keys, min(count, 5))] + [11, 7]  # 11 and 7: no row

    found = held.cosines(query, depth, asked, excluded)

    expected_keys, expected = exhaustive(held, query, depth, excluded)
    assert found.nearest_keys.tolist() == expected_keys
    assert found.nearest.tolist() == expected  # the same float64 values, not merely close ones
    by_key = dict(zip(keys.tolist(), exact(matrix, query).tolist(), strict=True))
    lexical = found.lexical.tolist()
    if not expected_keys:  # every row excluded: as if the Scope had no vectors
        assert all(math.isnan(x) for x in lexical) and (found.mean, found.spread) == (0.0, 0.0)
        return
    assert lexical[:-2] == [by_key[key] for key in asked[:-2]] and all(math.isnan(x) for x in lexical[-2:])
    kept = [by_key[key] for key in keys.tolist() if key not in excluded]
    # The statistics are the estimates', each within a rounding step of its cosine.
    assert abs(found.mean - float(np.mean(kept))) <= 0.05
    assert abs(found.spread - float(np.std(kept))) <= 0.05


def test_a_screen_extended_by_new_rows_estimates_as_one_built_at_once() -> None:
    rng = np.random.default_rng(5)
    matrix = rows_of("gaussian", 500, 24, rng)
    query = rows_of("gaussian", 1, 24, rng)[0]
    whole = Screen.of(matrix).estimates(query)
    screen = Screen.of(matrix[:0])
    for then in (1, 2, 70, 499, 500):
        screen = Screen.of(matrix[:then], before=screen)
        grown = screen.estimates(query)
        np.testing.assert_array_equal(grown.cosines, whole.cosines[:then])
        np.testing.assert_array_equal(grown.error, whole.error[:then])


def test_an_empty_scope_has_no_estimates_and_no_nearest() -> None:
    matrix = np.zeros((0, 8), dtype=np.float32)
    held = _ScopeVectors((0, 0, 0), np.zeros(0, dtype=np.int64), matrix, Screen.of(matrix))
    found = held.cosines(unit(np.ones(8, dtype=np.float32)), 8, [3], set())
    assert found.nearest_keys.tolist() == [] and math.isnan(found.lexical[0])
