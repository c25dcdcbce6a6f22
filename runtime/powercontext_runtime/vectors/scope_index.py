"""Exact cosine search over each Scope's stored vectors of one family, held in memory per Scope.

A Scope's copy is checked against the database's stamp (deletions so far, largest key) on every
search; new rows are appended, and a copy of a Scope that lost rows since (a revise, retire or
erase, in any process) is read again. The ranking is a float32 matrix product, then an order by similarity
and, for equal ones, the newer document first: the same bytes on every backend give the same order.
"""

from __future__ import annotations

import threading
from collections.abc import Collection
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ..search import Conn
from . import rows
from .leg import Vectors, unit


@dataclass(frozen=True, slots=True)
class _ScopeVectors:
    stamp: tuple[int, int, int]  # rows.stamp
    document_keys: npt.NDArray[np.int64]
    matrix: Vectors  # unit rows


class ScopeIndex:
    def __init__(self, table: rows.VectorTable, model: str, dims: int) -> None:
        self._table = table
        self._model = model
        self._dims = dims
        self._lock = threading.Lock()
        self._scopes: dict[int, _ScopeVectors] = {}

    def top(
        self, conn: Conn, scope_key: int, query: Vectors, limit: int, excluded: Collection[int] = ()
    ) -> list[int]:
        """The Scope's document keys most similar to the unit vector `query`, best first, without
        the `excluded` ones (left out before the cut, so they take no other's place)."""
        held = self._current(conn, scope_key)
        if not len(held.document_keys) or limit <= 0:
            return []
        similarity, keys = held.matrix @ query, held.document_keys
        if excluded:
            kept = ~np.isin(keys, np.fromiter(excluded, dtype=np.int64))
            similarity, keys = similarity[kept], keys[kept]
        if len(similarity) > limit:  # only the best `limit`, and whatever ties the last of them, are sorted
            floor = np.partition(similarity, len(similarity) - limit)[len(similarity) - limit]
            chosen = np.flatnonzero(similarity >= floor)
            similarity, keys = similarity[chosen], keys[chosen]
        order = np.lexsort((-keys, -similarity))[:limit]
        return [int(key) for key in keys[order]]

    def _current(self, conn: Conn, scope_key: int) -> _ScopeVectors:
        stamp = rows.stamp(conn, self._table, scope_key, self._model, self._dims)
        with self._lock:
            held = self._scopes.get(scope_key)
        if held is not None and held.stamp == stamp:
            return held
        if held is not None and held.stamp[:2] == stamp[:2]:  # only additions since
            _, keys, vectors = rows.since(
                conn, self._table, scope_key, self._model, self._dims, held.stamp[2]
            )
            document_keys = np.concatenate([held.document_keys, np.asarray(keys, dtype=np.int64)])
            matrix = np.concatenate([held.matrix, unit(vectors)])
        else:
            _, keys, vectors = rows.since(conn, self._table, scope_key, self._model, self._dims, 0)
            document_keys, matrix = np.asarray(keys, dtype=np.int64), unit(vectors)
        fresh = _ScopeVectors(stamp, document_keys, matrix)
        with self._lock:
            self._scopes[scope_key] = fresh
        return fresh
