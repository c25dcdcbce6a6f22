"""Ranked reads: a family's mirror brought to the reader's snapshot, the query's missing terms read
from segments, runs and deferred writes, and BM25's best documents per Scope."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from . import _doclists, _log
from ._bm25 import TermPostings, term_weights
from ._conn import Conn, Query, marks
from ._mirror import FamilyMirror, SearchMirror
from ._neighbours import NEIGHBOUR_FAMILIES
from ._pending import PendingRows
from ._postings import packed_views, single_tf


def _pending(
    conn: Conn, pending: PendingRows, scope_key: int, family: str
) -> list[tuple[_log.LoggedWrite, str | None]]:
    """The writes whose postings are still (partly) only in their log rows, each with the last
    term a merge under way has already moved into its target run (None: none)."""
    progress = _merge_progress(conn, scope_key, family)
    return [
        (write, progress[0] if progress is not None and generation in progress[1] else None)
        for generation, write in pending.read(conn, scope_key, family)
    ]


def _merge_progress(conn: Conn, scope_key: int, family: str) -> tuple[str, set[int]] | None:
    """The last term a merge under way has merged and the log generations of the deferred writes
    it merges (their postings of terms up to it are in the target run now), or None."""
    row = conn.execute(
        "SELECT merged_through FROM search_merges WHERE scope_key = ? AND family = ?", (scope_key, family)
    ).fetchone()
    if row is None:
        return None
    return str(row[0]), {
        int(generation)
        for (generation,) in conn.execute(
            "SELECT generation FROM search_merge_sources WHERE scope_key = ? AND family = ?",
            (scope_key, family),
        )
    }


# Each (Scope, family)'s index statistics: its generation, documents and their total length.
IndexStats = dict[tuple[int, str], tuple[int, int, int]]


def index_stats(conn: Conn, scope_keys: Sequence[int]) -> IndexStats:
    """Every family's index statistics of the Scopes, in one statement (a prepare ranks up to
    four families of the same Scopes in one snapshot)."""
    if not scope_keys:
        return {}
    return stats_of(
        conn.execute(
            "SELECT scope_key, family, generation, documents, total_length FROM search_stats"
            f" WHERE scope_key IN ({marks(scope_keys)})",
            tuple(scope_keys),
        ).fetchall()
    )


def index_stats_joined_query(scopes_table: str, where: str, params: Sequence[object]) -> Query:
    """`index_stats`' query for the Scopes that `where` selects from `scopes_table` (a table with a
    `scope_key` column), for a caller to send with others before it knows their keys. A join led
    by those rows: OceanBase plans `scope_key IN (SELECT ...)` as a hash join over every Scope's
    statistics, read whole for each prepare; the hint (a comment to SQLite) keeps it to the
    selected Scopes' rows."""
    return (
        "SELECT /*+ LEADING(k st) USE_NL(st) */ st.scope_key, st.family, st.generation, st.documents,"
        f" st.total_length FROM {scopes_table} k JOIN search_stats st ON st.scope_key = k.scope_key"
        f" WHERE {where}",
        tuple(params),
    )


def stats_of(rows: Sequence[Any]) -> IndexStats:
    return {(int(row[0]), str(row[1])): (int(row[2]), int(row[3]), int(row[4])) for row in rows}


def ranked(
    conn: Conn,
    mirror: SearchMirror,
    scope_keys: Sequence[int],
    family: str,
    terms: Sequence[str],
    limit: int,
    excluded: Mapping[int, Collection[int]] | None = None,
    stats: IndexStats | None = None,
) -> dict[int, list[tuple[int, float]]]:
    """The best `doc_key`s of each Scope's family with their scores, best first, leaving out the
    `excluded` documents of each Scope before the cut to `limit` (they still count in the
    statistics BM25 weighs terms by, as every indexed document does). `stats`: `index_stats` of
    these Scopes read in this transaction, else read here.

    The caller holds `mirror.lock`. A transaction begun after taking it sees everything the mirror
    has replayed; one begun earlier (inside `Store.reading()`) may not, and ranks as of its own
    snapshot all the same, see `_synced`.
    """
    if not terms or not scope_keys:
        return {key: [] for key in scope_keys}
    if stats is None:
        stats = index_stats(conn, scope_keys)
    found: dict[int, list[tuple[int, float]]] = {}
    for scope_key in scope_keys:
        generation, documents, total_length = stats.get((scope_key, family), (0, 0, 0))
        if documents == 0:
            found[scope_key] = []
            continue
        family_mirror, alive = _synced(conn, mirror, scope_key, family, generation)
        borrowed: dict[str, TermPostings] = {}
        missing = family_mirror.missing(terms, generation)
        if missing:
            for term, (keys, frequencies) in _read_terms(
                conn, mirror.pending, scope_key, family, missing
            ).items():
                postings = family_mirror.postings_of(keys, frequencies)
                if family_mirror.generation == generation:
                    family_mirror.install(term, postings)
                else:
                    borrowed[term] = postings
        weights = term_weights(terms, family_mirror.frequencies(terms, borrowed, alive), documents)
        ranked_alive = family_mirror.without((excluded or {}).get(scope_key, ()), alive)
        found[scope_key] = family_mirror.top(
            weights, total_length / documents, limit, borrowed, ranked_alive, family in NEIGHBOUR_FAMILIES
        )
        family_mirror.forget_rare()  # only a mirror that just ranked can have taken new rare terms
    mirror.evict()
    return found


def _synced(
    conn: Conn, mirror: SearchMirror, scope_key: int, family: str, generation: int
) -> tuple[FamilyMirror, npt.NDArray[np.bool_] | None]:
    """The family's mirror brought up to `generation` (replayed from the log, or rebuilt from the
    tables if it was behind), and None; or, when another request already moved it past this
    transaction's older snapshot, the mirror and which of its documents this snapshot sees.

    Postings read in an older snapshot lack newer documents, so such a reader borrows them for
    its own query and never installs them. A mirror whose history does not reach back that far
    gives way to a private one built from this snapshot alone (rare: only just after a rebuild).
    """
    current = mirror.get(scope_key, family)
    if current is not None and current.generation > generation:
        alive = current.alive_at(generation)
        if alive is not None:
            return current, alive
        return FamilyMirror(generation, _doclists.documents(conn, scope_key, family, generation)), None
    if current is not None and current.generation < generation and not current.stale:
        rows = _doclists.logged_since(conn, scope_key, family, current.generation, generation)
        if rows is not None:
            current.replay(rows)
    if current is not None and current.generation == generation and not current.stale:
        return current, None
    rebuilt = FamilyMirror(generation, _doclists.documents(conn, scope_key, family, generation))
    mirror.put(scope_key, family, rebuilt)
    return rebuilt, None


def _read_terms(
    conn: Conn, pending: PendingRows, scope_key: int, family: str, terms: list[str]
) -> dict[str, tuple[npt.NDArray[np.int64], npt.NDArray[np.int32]]]:
    """Each term's postings as (doc_keys, term frequencies): its segment rows, its rows in each run,
    and those of deferred writes not merged yet. A deferred write still lists documents unindexed
    since; a mirror skips those it does not know and masks the ones it knows as removed. Decoded
    rows stay views until each term's postings are laid out once, in C (a common term's hundreds
    of thousands, read cold, cost their copies and the first touch of their memory)."""
    singles: dict[str, tuple[list[int], list[int]]] = {term: ([], []) for term in terms}
    parts: dict[str, list[_Part]] = {term: [] for term in terms}
    runs = [
        int(segment)
        for (segment,) in conn.execute(
            "SELECT segment FROM search_run_sizes WHERE scope_key = ? AND family = ?", (scope_key, family)
        )
    ]
    in_runs = (
        f" UNION ALL SELECT term, segment, postings FROM search_runs WHERE scope_key = ? AND family = ?"
        f" AND segment IN ({marks(runs)}) AND term IN ({marks(terms)})"
        if runs
        else ""
    )
    for term, segment, packed in conn.execute(
        "SELECT term, segment, postings FROM search_segments"
        f" WHERE scope_key = ? AND family = ? AND term IN ({marks(terms)}){in_runs}",
        (scope_key, family, *terms, *((scope_key, family, *runs, *terms) if runs else ())),
    ):
        tf = single_tf(packed)
        if tf is not None:  # the common single posting, without arrays
            keys, tfs = singles[term]
            keys.append(int(segment))
            tfs.append(tf)
            continue
        offsets, frequencies = packed_views(bytes(packed))
        parts[term].append((offsets, int(segment), frequencies))
    for write, merged_through in _pending(conn, pending, scope_key, family):
        for term in terms:
            if merged_through is not None and term <= merged_through:
                continue  # in the target run already, read above
            at = bisect_left(write.terms, term)
            if at < len(write.terms) and write.terms[at] == term:
                start, end = int(write.bounds[at]), int(write.bounds[at + 1])
                parts[term].append((write.doc_keys[write.positions[start:end]], 0, write.tfs[start:end]))
    return {term: _laid_out(*singles[term], parts[term]) for term in terms}


# Postings of one row: document keys less `base` (or whole, with a base of 0), term frequencies.
_Part = tuple[npt.NDArray[np.integer], int, npt.NDArray[np.int32]]


def _laid_out(
    single_keys: list[int], single_tfs: list[int], parts: list[_Part]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int32]]:
    """One term's postings in two arrays, each allocated once: the single postings, then each
    part's keys (widened, plus its base) and frequencies, in order."""
    total = len(single_keys) + sum(len(offsets) for offsets, _, _ in parts)
    keys = np.empty(total, np.int64)
    tfs = np.empty(total, np.int32)
    at = len(single_keys)
    keys[:at] = single_keys
    tfs[:at] = single_tfs
    for offsets, base, frequencies in parts:
        end = at + len(offsets)
        keys[at:end] = offsets
        if base:
            keys[at:end] += base
        tfs[at:end] = frequencies
        at = end
    return keys, tfs
