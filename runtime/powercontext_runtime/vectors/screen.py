"""A first pass over a Scope's vectors in 8-bit integers that rules out, with certainty, the rows
that cannot be among the nearest, so only the few that can are scored exactly.

Each unit row is also held as int8, scaled so that its largest component is ±127, and the query is
quantised the same way. numkong's integer kernel gives each row's dot product with the query
exactly (integer sums: no rounding, the same on every CPU) from a quarter of the bytes a float32
product reads: at 10k rows of 768 dimensions, out of the cache as a prepare leaves them, some
0.6 ms against 1.8 to 2 ms for the float32 product on the slower of this project's 2-core
machines. Rounding moves each component by at most half a step, which bounds how far the integer
estimate can lie from the true cosine (`Estimates.error`): a row whose estimate plus its bound
falls below the `depth`-th best estimate minus its bound is certainly not among the `depth`
nearest, and the rest (typically two to four times `depth`) are scored exactly (`exact`).

Pure functions over arrays, and one frozen holder per Scope's rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numkong
import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]
Floats = npt.NDArray[np.float64]
Rows = npt.NDArray[np.intp]

_STEPS = 127  # the largest int8 magnitude, which each row's largest component is scaled to
# Room for float64's rounding in the estimates and in `exact` (each some 1e-13 at most for unit
# rows of a few thousand dimensions).
_MARGIN = 1e-9


@dataclass(frozen=True, slots=True)
class Estimates:
    """Every row's integer estimate of its cosine to a query, and how far off it can be."""

    cosines: Floats
    error: Floats  # |estimate - true cosine| <= error, and likewise for `exact`'s value

    def candidates(self, depth: int) -> Rows:
        """The rows that can be among the `depth` of highest cosine, ties included: every row
        whose upper bound reaches the `depth`-th highest lower bound."""
        count = len(self.cosines)
        if count <= depth:
            return np.arange(count)
        lower = self.cosines - self.error
        floor = np.partition(lower, count - depth)[count - depth]
        return np.flatnonzero(self.cosines + self.error >= floor)


@dataclass(frozen=True, slots=True)
class Screen:
    """Rows in int8, with what bounds their rounding."""

    codes: npt.NDArray[np.int8]
    scales: Floats  # code = round(component * scale)
    steps: Floats  # the sum of each row's codes' magnitudes

    @classmethod
    def of(cls, rows: Vectors) -> Screen:
        """Each row scaled so its largest magnitude is 127, then rounded (a zero row stays zero):
        a row's codes depend on it alone, so rows added later are screened on their own."""
        largest = np.abs(rows).max(axis=-1).astype(np.float64)
        scales = np.divide(_STEPS, largest, out=np.ones_like(largest), where=largest > 0)
        codes = np.clip(np.rint(rows * scales[..., None]), -_STEPS, _STEPS).astype(np.int8)
        return cls(codes, scales, np.abs(codes).sum(axis=-1, dtype=np.int64).astype(np.float64))

    @property
    def nbytes(self) -> int:
        return int(self.codes.nbytes + self.scales.nbytes + self.steps.nbytes)

    def estimates(self, query: Vectors) -> Estimates:
        """Each row's estimate of its cosine to the unit vector `query`, with its bound.

        With a row's codes a = s·v + δ and the query's b = t·q + η (|δ|, |η| <= 1/2 a component),
        s·t·(v·q) = a·b - a·η - δ·b + δ·η, so the estimate a·b / (s·t) lies within
        (|a|₁/2 + |b|₁/2 + d/4) / (s·t) of the cosine. Float64 carries that arithmetic and the
        exact scores' own rounding (below 1e-12 of a unit dot product) well inside the margin
        added for them."""
        if not len(self.codes):
            return Estimates(np.empty(0), np.empty(0))
        asked = Screen.of(query[None, :])
        # Integer sums handed back as float64: exact, 127² times the dimensions being far below 2**53.
        dots = np.asarray(numkong.cdist(self.codes, asked.codes, metric="dot", out_dtype="float64"))[:, 0]
        scale = self.scales * asked.scales[0]
        error = (0.5 * (self.steps + asked.steps[0]) + 0.25 * len(query)) / scale + _MARGIN
        return Estimates(dots / scale, error)


def exact(rows: Vectors, query: Vectors) -> Floats:
    """The cosines of unit `rows` to the unit `query`, in float64 (products of float32 are exact
    in it), one row at a time: a row's value never depends on which others are scored with it."""
    cosines: Floats = np.vecdot(rows, query.astype(np.float64))
    return cosines
