"""Deferred writes' log rows, unpacked once per process.

A cold term read looks each of its words up in every write still waiting to be merged (`_log.py`
holds a batch's postings in its one row). Reading those rows again for every query was nearly a
fifth of a cold query's time at a million entries just ingested (38 batches, 10 MB a query). So a
process keeps them, unpacked, and asks the database only which rows are pending and how long each
is: a row is known by its generation, its `doc_key` and its length, since an erasure rewrites a
row shorter (`_log.without_documents`) and the next read then fetches it again. A merged row
leaves the pending list, and the cache with it.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from . import _log
from ._conn import Conn, marks

# Rows kept in all, counted by their bytes: a merger far behind (hundreds of batches) is read as
# before, not held.
MAX_BYTES = 64 * 2**20
_GENERATIONS_PER_STATEMENT = 500


@dataclass(frozen=True, slots=True)
class _Row:
    base: int  # the row's doc_key
    size: int  # bytes of its `added`
    write: _log.LoggedWrite


class PendingRows:
    """Each (Scope, family)'s deferred writes as last read, least recently read first. The
    caller holds the search mirror's lock."""

    def __init__(self, max_bytes: int | None = None) -> None:
        self._rows: OrderedDict[tuple[int, str], dict[int, _Row]] = OrderedDict()
        self._max_bytes = MAX_BYTES if max_bytes is None else max_bytes

    def read(self, conn: Conn, scope_key: int, family: str) -> list[tuple[int, _log.LoggedWrite]]:
        """The family's deferred writes as this transaction sees them, by log generation, oldest
        first, their terms left packed (`_log.unpack(lazy=True)`)."""
        # No condition on the log's own columns here: one (`l.added IS NOT NULL`) made SQLite lead
        # with the log, every row the family ever logged, instead of the few pending ones.
        listed = conn.execute(
            "SELECT p.generation, l.doc_key, length(l.added) FROM search_pending p JOIN search_log l"
            " ON l.scope_key = p.scope_key AND l.family = p.family AND l.generation = p.generation"
            " WHERE p.scope_key = ? AND p.family = ?",
            (scope_key, family),
        ).fetchall()
        known = self._rows.get((scope_key, family), {})
        rows: dict[int, _Row] = {}
        fresh: list[int] = []
        for generation, base, size in listed:
            if size is None:
                continue  # a write that only took documents away
            row = known.get(int(generation))
            if row is not None and row.base == int(base) and row.size == int(size):
                rows[int(generation)] = row
            else:
                fresh.append(int(generation))
        for start in range(0, len(fresh), _GENERATIONS_PER_STATEMENT):
            some = fresh[start : start + _GENERATIONS_PER_STATEMENT]
            for generation, base, added in conn.execute(
                "SELECT generation, doc_key, added FROM search_log WHERE scope_key = ? AND family = ?"
                f" AND generation IN ({marks(some)})",
                (scope_key, family, *some),
            ):
                blob = bytes(added)
                rows[int(generation)] = _Row(int(base), len(blob), _log.unpack(int(base), blob, lazy=True))
        self._keep((scope_key, family), rows)
        return [(generation, rows[generation].write) for generation in sorted(rows)]

    def _keep(self, key: tuple[int, str], rows: dict[int, _Row]) -> None:
        self._rows[key] = rows
        self._rows.move_to_end(key)
        held = sum(row.size for kept in self._rows.values() for row in kept.values())
        while held > self._max_bytes and self._rows:  # the newest goes too if it alone is over
            held -= sum(row.size for row in self._rows.popitem(last=False)[1].values())

    def clear(self) -> None:
        self._rows.clear()
