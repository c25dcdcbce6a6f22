"""The vector leg's integer first pass (`vectors/screen.py`): its bound holds, and the nearest it
lets through, scored exactly, are exactly what scoring every row gives (RFC-free: issue #32's
"exact cosine over stored vectors"). And a Scope's held rows, grown by writes
(`vectors/appendable.py`), hold and answer exactly as rows read at once."""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from typing import Any

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
    held = _ScopeVectors.holding((0, 0, 0), keys, matrix)
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


def _columns(held: _ScopeVectors) -> list[npt.NDArray[Any]]:
    screen = held.screen
    return [
        held.document_keys,
        held.matrix,
        screen.codes,
        screen.scales,
        screen.steps,
        held.sorted_keys,
        held.rows_by_key,
    ]


def _assert_same_rows(found: _ScopeVectors, expected: _ScopeVectors) -> None:
    for got, want in zip(_columns(found), _columns(expected), strict=True):
        np.testing.assert_array_equal(got, want, strict=True)


@settings(max_examples=150, deadline=None)
@given(
    first=st.integers(0, 30),
    steps=st.lists(
        st.tuples(st.integers(0, 40), st.sampled_from(["after", "shuffled", "among"]), st.booleans()),
        min_size=1,
        max_size=12,
    ),
    dims=st.sampled_from([1, 3, 16]),
    seed=st.integers(0, 2**32 - 1),
)
def test_held_rows_extended_step_by_step_are_the_rows_held_at_once_and_no_snapshot_changes(
    first: int, steps: list[tuple[int, str, bool]], dims: int, seed: int
) -> None:
    """Rows added after the held ones (new documents), in another order, or among them, to the
    newest snapshot or to an older one (two searches that saw the same write): each result holds
    and answers exactly as a snapshot read at once, and every earlier snapshot still holds what it
    held."""
    rng = np.random.default_rng(seed)
    used = {int(key) for key in rng.choice(10_000, first, replace=False)}
    snapshots = [
        _ScopeVectors.holding(
            (0, 0, 0), np.asarray(sorted(used), dtype=np.int64), rows_of("gaussian", first, dims, rng)
        )
    ]
    copies = [[column.copy() for column in _columns(snapshots[0])]]
    query = rows_of("gaussian", 1, dims, rng)[0]
    for size, where, stale in steps:
        parent = snapshots[int(rng.integers(len(snapshots)))] if stale else snapshots[-1]
        top = int(parent.document_keys.max(initial=0))
        if where == "among":
            pool = [key for key in range(1, top + len(used) + size + 2) if key not in used]
            chosen = rng.choice(pool, size, replace=False)
        else:
            chosen = np.arange(top + 1, top + 1 + size)
            if where == "shuffled":
                chosen = rng.permutation(chosen)
        keys = np.asarray(chosen, dtype=np.int64)
        used.update(keys.tolist())
        matrix = rows_of("gaussian", size, dims, rng)
        grown = parent.extended((0, 0, len(snapshots)), keys, matrix)
        at_once = _ScopeVectors.holding(
            (0, 0, len(snapshots)),
            np.concatenate([parent.document_keys, keys]),
            np.concatenate([parent.matrix, matrix]),
        )
        _assert_same_rows(grown, at_once)
        asked = [int(key) for key in rng.choice(at_once.document_keys, min(3, len(keys) + first))] + [0]
        found, expected = grown.cosines(query, 5, asked, ()), at_once.cosines(query, 5, asked, ())
        assert found.nearest_keys.tolist() == expected.nearest_keys.tolist()
        assert found.nearest.tolist() == expected.nearest.tolist()
        np.testing.assert_array_equal(found.lexical, expected.lexical)
        assert (found.mean, found.spread) == (expected.mean, expected.spread)
        snapshots.append(grown)
        copies.append([column.copy() for column in _columns(grown)])
    for snapshot, copy in zip(snapshots, copies, strict=True):
        for column, before in zip(_columns(snapshot), copy, strict=True):
            np.testing.assert_array_equal(column, before, strict=True)


def test_rows_added_one_at_a_time_are_not_copied_each_time() -> None:
    """An agent's loop writes a turn and prepares: each prepare adds a vector or two to a held
    Scope, which must cost the rows added, not a copy of all of them."""
    rng = np.random.default_rng(8)
    held = _ScopeVectors.holding(
        (0, 0, 0), np.arange(1, 1001, dtype=np.int64), rows_of("gaussian", 1000, 8, rng)
    )
    assert held.nbytes == sum(column.nbytes for column in _columns(held))  # read once: no room
    copies = 0
    for key in range(1001, 1401):
        grown = held.extended((0, 0, key), np.asarray([key], dtype=np.int64), rows_of("gaussian", 1, 8, rng))
        copies += not np.shares_memory(grown.matrix, held.matrix)
        held = grown
    assert copies == 2  # room for a quarter more each time: 1000 -> 1251 -> 1565 rows
    # per row: 8 float32 and 8 int8 components, the key, scale, sum of steps, sorted key and its row
    assert held.nbytes == 1565 * (8 * 4 + 8 + 8 + 8 + 8 + 8 + 8)


def test_searches_that_saw_the_same_write_each_extend_correctly_at_once() -> None:
    rng = np.random.default_rng(9)
    parent = _ScopeVectors.holding(
        (0, 0, 0), np.arange(1, 201, dtype=np.int64), rows_of("gaussian", 200, 8, rng)
    )
    parent = parent.extended(
        (0, 0, 1), np.asarray([201], dtype=np.int64), rows_of("gaussian", 1, 8, rng)
    )  # room now
    tails = [(np.arange(202, 202 + n, dtype=np.int64), rows_of("gaussian", n, 8, rng)) for n in range(1, 9)]
    with ThreadPoolExecutor(8) as pool:
        grown = list(pool.map(lambda tail: parent.extended((0, 0, 2), *tail), tails))
    for found, (keys, matrix) in zip(grown, tails, strict=True):
        both = np.concatenate([parent.document_keys, keys]), np.concatenate([parent.matrix, matrix])
        _assert_same_rows(found, _ScopeVectors.holding((0, 0, 2), *both))
    assert sum(np.shares_memory(found.matrix, parent.matrix) for found in grown) == 1  # one wrote in place


def test_an_empty_scope_has_no_estimates_and_no_nearest() -> None:
    matrix = np.zeros((0, 8), dtype=np.float32)
    held = _ScopeVectors.holding((0, 0, 0), np.zeros(0, dtype=np.int64), matrix)
    found = held.cosines(unit(np.ones(8, dtype=np.float32)), 8, [3], set())
    assert found.nearest_keys.tolist() == [] and math.isnan(found.lexical[0])
