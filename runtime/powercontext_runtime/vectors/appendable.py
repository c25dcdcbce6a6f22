"""Equal-length arrays that grow at the end without copying what they already hold: the columns
of one Scope's held vectors, which every search's snapshot views and each write's new rows extend.

A snapshot views the first rows it was given, and rows are only ever written past the last row
any snapshot views, so no snapshot sees its rows change. Without room, or when rows were already
written past the ones being extended (two searches that both saw the same write), the result is
a copy with a quarter more room: appending costs in proportion to what is added, not to what is
held (at 10k vectors of 768 dimensions a copy of everything took some 4 ms on the slower of this
project's machines).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

Column = npt.NDArray[Any]

_MIN_ROOM = 16


class Appendable:
    """Columns of equal length with room past their filled rows."""

    __slots__ = ("_columns", "_filled", "_lock")

    def __init__(self, columns: Sequence[Column], filled: int | None = None) -> None:
        """The columns as they are (no room yet), or their first `filled` rows filled."""
        self._columns = tuple(columns)
        self._filled = len(self._columns[0]) if filled is None else filled
        self._lock = threading.Lock()

    @property
    def nbytes(self) -> int:
        """What the columns take, their room included."""
        return sum(int(column.nbytes) for column in self._columns)

    def first(self, count: int) -> tuple[Column, ...]:
        """Views of each column's first `count` rows."""
        return tuple(column[:count] for column in self._columns)

    def extended(self, count: int, tails: Sequence[Column]) -> Appendable:
        """Columns whose rows are these' first `count` and then `tails` (one per column): these,
        written in place when nothing was written past `count` yet and the room holds the tails,
        else a copy with room to spare."""
        total = count + len(tails[0])
        with self._lock:
            if self._filled == count and total <= len(self._columns[0]):
                for column, tail in zip(self._columns, tails, strict=True):
                    column[count:total] = tail
                self._filled = total
                return self
            room = total + max(total // 4, _MIN_ROOM)
            grown = []
            for column, tail in zip(self._columns, tails, strict=True):
                fresh = np.empty((room, *column.shape[1:]), dtype=column.dtype)
                fresh[:count] = column[:count]
                fresh[count:total] = tail
                grown.append(fresh)
        return Appendable(grown, total)
