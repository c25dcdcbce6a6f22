"""Exact cosine search over each Scope's stored vectors of a family, held in memory per Scope and
family, within a byte budget (the least recently searched go first and are read again when next
searched).

A Scope's copy is checked against the database's stamp (deletions so far, largest key) on every
search; new rows are appended, and a copy of a Scope that lost rows since (a revise, retire or
erase, in any process) is read again. The ranking is a float32 matrix product, then an order by similarity
and, for equal ones, the newer document first: the same bytes on every backend give the same order.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Collection
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ..search import Conn
from . import rows
from .leg import DEFAULT_CACHE_BYTES, Vectors, unit


@dataclass(frozen=True, slots=True)
class _ScopeVectors:
    stamp: tuple[int, int, int]  # rows.stamp
    document_keys: npt.NDArray[np.int64]
    matrix: Vectors  # unit rows

    @property
    def nbytes(self) -> int:
        return int(self.document_keys.nbytes + self.matrix.nbytes)


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

    def top(
        self,
        conn: Conn,
        table: rows.VectorTable,
        scope_key: int,
        query: Vectors,
        limit: int,
        excluded: Collection[int] = (),
    ) -> list[int]:
        """The Scope's document keys most similar to the unit vector `query`, best first, without
        the `excluded` ones (left out before the cut, so they take no other's place)."""
        held = self._current(conn, table, scope_key)
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
            document_keys = np.concatenate([held.document_keys, np.asarray(keys, dtype=np.int64)])
            matrix = np.concatenate([held.matrix, unit(vectors)])
        else:
            _, keys, vectors = rows.since(conn, table, scope_key, self._model, self._dims, 0)
            document_keys, matrix = np.asarray(keys, dtype=np.int64), unit(vectors)
        fresh = _ScopeVectors(stamp, document_keys, matrix)
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
