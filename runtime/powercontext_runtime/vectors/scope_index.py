"""Exact cosine search over each Scope's stored vectors of a family, held in memory per Scope and
family, within a byte budget (the least recently searched go first and are read again when next
searched).

A Scope's copy is checked against the database's stamp (deletions so far, largest key) on every
search. New rows are written past the held ones (`appendable.py`: each search's snapshot views the
rows it was given, so a write costs what it adds, not a copy of the Scope), and a copy of a Scope
that lost rows since (a revise, retire or erase, in any process) is read again. An integer first
pass (`screen.py`) rules out the rows that cannot be among the nearest; the rest are scored
exactly, in float64, then ordered by similarity and, for equal ones, the newer document first: the
same bytes on every backend give the same order.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ..search import Conn
from . import rows
from .appendable import Appendable
from .fusion import Cosines, Floats, Keys
from .leg import DEFAULT_CACHE_BYTES, Vectors, unit
from .screen import Estimates, Screen, exact


@dataclass(frozen=True, slots=True)
class _ScopeVectors:
    """One snapshot of a Scope's held vectors: views of the first rows of `storage`."""

    stamp: tuple[int, int, int]  # rows.stamp
    document_keys: npt.NDArray[np.int64]
    matrix: Vectors  # unit rows
    screen: Screen  # the same rows in int8
    # The document keys in ascending order and where each is in `document_keys`: a few keys' rows
    # are found by bisection (a dict of them would cost a Python object per vector).
    sorted_keys: npt.NDArray[np.int64]
    rows_by_key: npt.NDArray[np.intp]
    storage: Appendable  # the columns above, with room for the rows to come

    @classmethod
    def holding(cls, stamp: tuple[int, int, int], document_keys: Keys, matrix: Vectors) -> _ScopeVectors:
        """These rows, held exactly (no room: most Scopes are read far more than written)."""
        order = np.argsort(document_keys, kind="stable")
        columns = _columns(document_keys, matrix, document_keys[order], order)
        return cls._viewing(stamp, Appendable(columns), len(document_keys))

    @classmethod
    def _viewing(cls, stamp: tuple[int, int, int], storage: Appendable, count: int) -> _ScopeVectors:
        keys, matrix, codes, scales, steps, sorted_keys, rows_by_key = storage.first(count)
        return cls(stamp, keys, matrix, Screen(codes, scales, steps), sorted_keys, rows_by_key, storage)

    def extended(self, stamp: tuple[int, int, int], document_keys: Keys, matrix: Vectors) -> _ScopeVectors:
        """These rows and then those: written past them when the new keys come after every held
        one (new documents do), so only the new rows are copied; else all held again."""
        count, added = len(self.document_keys), len(document_keys)
        ascending = bool(np.all(np.diff(document_keys) > 0))
        if not ascending or (count and added and document_keys[0] <= self.sorted_keys[-1]):
            both = np.concatenate([self.document_keys, document_keys])
            return _ScopeVectors.holding(stamp, both, np.concatenate([self.matrix, matrix]))
        # Appended in key order, the new keys extend the sorted ones as they are.
        tails = _columns(document_keys, matrix, document_keys, np.arange(count, count + added, dtype=np.intp))
        return _ScopeVectors._viewing(stamp, self.storage.extended(count, tails), count + added)

    @property
    def nbytes(self) -> int:
        return self.storage.nbytes

    def rows_of(self, asked: Sequence[int]) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.bool_]]:
        """The rows of the asked keys that have one, in their order, and which of them do."""
        if not len(asked) or not len(self.sorted_keys):
            return np.empty(0, dtype=np.intp), np.zeros(len(asked), dtype=np.bool_)
        wanted = np.asarray(asked, dtype=np.int64)
        at = np.minimum(np.searchsorted(self.sorted_keys, wanted), len(self.sorted_keys) - 1)
        held = self.sorted_keys[at] == wanted
        return self.rows_by_key[at[held]], held

    def cosines(self, query: Vectors, depth: int, asked: Sequence[int], excluded: Collection[int]) -> Cosines:
        """`ScopeIndex.cosines` of these rows."""
        estimates = self.screen.estimates(query)
        kept = None
        if excluded:
            kept = np.flatnonzero(~np.isin(self.document_keys, np.fromiter(excluded, dtype=np.int64)))
            estimates = Estimates(estimates.cosines[kept], estimates.error[kept])
        if not len(estimates.cosines):
            return Cosines.absent(len(asked))
        chosen = estimates.candidates(depth) if kept is None else kept[estimates.candidates(depth)]
        asked_rows, held = self.rows_of(asked)
        scored = exact(self.matrix[np.concatenate([chosen, asked_rows])], query)  # one pass for both
        nearest_keys, nearest = _nearest(scored[: len(chosen)], self.document_keys[chosen], depth)
        lexical = np.full(len(asked), np.nan)
        lexical[held] = scored[len(chosen) :]
        # The mean and spread of the integer estimates, not of the cosines (which would take the
        # product over every row again): some 1e-4 and 0.1 % off theirs (search-index.md).
        # E[x²] - E[x]² in float64, by numpy's own sums, which add in the same order wherever the
        # array lies in memory.
        values = estimates.cosines
        mean = float(values.sum()) / len(values)
        spread = math.sqrt(max(0.0, float(np.square(values).sum()) / len(values) - mean * mean))
        return Cosines(nearest_keys, nearest, lexical, mean, spread)


def _columns(
    document_keys: Keys, matrix: Vectors, sorted_keys: Keys, rows_by_key: npt.NDArray[np.intp]
) -> tuple[npt.NDArray[Any], ...]:
    """What a Scope's rows are held as, in `_ScopeVectors._viewing`'s order."""
    screen = Screen.of(matrix)
    return (document_keys, matrix, screen.codes, screen.scales, screen.steps, sorted_keys, rows_by_key)


def _nearest(similarity: Floats, keys: npt.NDArray[np.int64], depth: int) -> tuple[Keys, Floats]:
    """The `depth` keys of highest similarity and theirs, best first; equal ones newer (higher key) first."""
    if len(similarity) > depth:  # only the best `depth`, and whatever ties the last of them, are sorted
        floor = np.partition(similarity, len(similarity) - depth)[len(similarity) - depth]
        chosen = np.flatnonzero(similarity >= floor)
        similarity, keys = similarity[chosen], keys[chosen]
    order = np.lexsort((-keys, -similarity))[:depth]
    return keys[order], similarity[order]


class ScopeIndex:
    """Every family's vectors, per Scope; one budget for all of them."""

    def __init__(self, model: str, dims: int, max_bytes: int = DEFAULT_CACHE_BYTES) -> None:
        self._model = model
        self._dims = dims
        self._max_bytes = max_bytes
        self._lock = threading.Lock()
        self._scopes: OrderedDict[tuple[str, str | None, int], _ScopeVectors] = OrderedDict()

    @property
    def held_bytes(self) -> int:
        with self._lock:
            return sum(held.nbytes for held in self._scopes.values())

    def cosines(
        self,
        conn: Conn,
        table: rows.VectorTable,
        scope_key: int,
        query: Vectors,
        depth: int,
        asked: Sequence[int] = (),
        excluded: Collection[int] = (),
    ) -> Cosines:
        """The Scope's vectors' cosines to the unit vector `query` as fusion reads them: the
        `depth` nearest document keys, the `asked` keys' own (those with a vector), and the mean
        and spread over them all, the `excluded` keys left out of both (before the cut, so they
        take no other's place)."""
        return self._current(conn, table, scope_key).cosines(query, depth, asked, excluded)

    def _current(self, conn: Conn, table: rows.VectorTable, scope_key: int) -> _ScopeVectors:
        key = (table.name, table.family, scope_key)
        stamp = rows.stamp(conn, table, scope_key, self._model, self._dims)
        with self._lock:
            held = self._scopes.get(key)
            if held is not None:
                self._scopes.move_to_end(key)
        if held is not None and held.stamp == stamp:
            return held
        if held is not None and held.stamp[:2] == stamp[:2]:  # only additions since
            _, keys, vectors = rows.since(conn, table, scope_key, self._model, self._dims, held.stamp[2])
            fresh = held.extended(stamp, np.asarray(keys, dtype=np.int64), unit(vectors))
        else:
            _, keys, vectors = rows.since(conn, table, scope_key, self._model, self._dims, 0)
            fresh = _ScopeVectors.holding(stamp, np.asarray(keys, dtype=np.int64), unit(vectors))
        with self._lock:
            self._scopes[key] = fresh
            self._scopes.move_to_end(key)
            self._evict()
        return fresh

    def _evict(self) -> None:
        """Within the budget again: forget the least recently searched, never the newest (a Scope
        larger than the whole budget is still searched, and held until another is)."""
        total = sum(held.nbytes for held in self._scopes.values())
        while total > self._max_bytes and len(self._scopes) > 1:
            total -= self._scopes.popitem(last=False)[1].nbytes
