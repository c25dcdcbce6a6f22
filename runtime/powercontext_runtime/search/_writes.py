"""Index writes: add documents (a segment row per term, or deferred in the log for a merge), take
them out again, forget erased words from the log, drop a Scope's index. Every change takes
generations in `search_stats` and leaves a `search_log` row for the mirrors to replay."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from . import _limits, _log
from ._bm25 import document_terms
from ._conn import Conn, Statement, marks
from ._postings import pack_postings, packed_rows, unpack_postings
from ._tokenised import TokenisedDocuments, tokenise_documents

_KEYS_PER_STATEMENT = 500
_POSTINGS_TABLES = ("search_segments", "search_runs")


def index_document(conn: Conn, scope_key: int, family: str, doc_key: int, text: str) -> None:
    index_documents(conn, scope_key, family, [(doc_key, text)])


def index_documents(conn: Conn, scope_key: int, family: str, docs: Sequence[tuple[int, str]]) -> None:
    write_documents(
        conn, scope_key, family, [key for key, _ in docs], tokenise_documents([t for _, t in docs])
    )


def write_documents(
    conn: Conn, scope_key: int, family: str, doc_keys: Sequence[int], tokenised: TokenisedDocuments
) -> None:
    """Index documents under consecutive generations, in order, with a statement per table, and log
    the write as one row for the mirrors to replay. The documents form one segment, named by their
    smallest key."""
    if not doc_keys:
        return
    # The counts first, then the generation as they left it: this write's own, whatever ran before.
    conn.executemany(*_counts(scope_key, family, doc_keys, tokenised))
    before = _generation(conn, scope_key, family) - len(doc_keys)
    conn.execute_all(_rows(scope_key, family, doc_keys, tokenised, before))


def document_writes(
    scope_key: int, family: str, doc_keys: Sequence[int], tokenised: TokenisedDocuments, generation: int
) -> list[Statement]:
    """The statements of `write_documents`, given the family's `generation` before them (0 when
    it has none yet) as the caller read it under the Scope's row lock: every writer of a Scope's
    index holds that lock, so no other write comes between. For the caller to send with its own."""
    if not doc_keys:
        return []
    return [
        _counts(scope_key, family, doc_keys, tokenised),
        *_rows(scope_key, family, doc_keys, tokenised, generation),
    ]


def _counts(scope_key: int, family: str, doc_keys: Sequence[int], tokenised: TokenisedDocuments) -> Statement:
    """The family's documents, total length and generation, each counting the documents in."""
    count = len(doc_keys)
    return (
        "INSERT INTO search_stats (scope_key, family, documents, total_length, generation) VALUES (?, ?, ?, ?, ?)"
        " ON CONFLICT (scope_key, family) DO UPDATE SET documents = documents + excluded.documents,"
        " total_length = total_length + excluded.total_length, generation = generation + excluded.generation",
        [(scope_key, family, count, sum(tokenised.lengths), count)],
    )


def _rows(
    scope_key: int, family: str, doc_keys: Sequence[int], tokenised: TokenisedDocuments, generation: int
) -> list[Statement]:
    """The documents' rows, their log row and postings (or a deferral), after `generation`."""
    count, segment = len(doc_keys), min(doc_keys)
    last = generation + count
    keys = np.asarray(doc_keys, np.int64)
    statements: list[Statement] = [
        (
            "INSERT INTO search_docs (family, doc_key, scope_key, length, segment) VALUES (?, ?, ?, ?, ?)",
            [
                (family, key, scope_key, length, segment)
                for key, length in zip(doc_keys, tokenised.lengths, strict=True)
            ],
        ),
        (
            "INSERT INTO search_log (scope_key, family, generation, doc_key, added) VALUES (?, ?, ?, ?, ?)",
            [(scope_key, family, last, segment, _log.pack(segment, keys, tokenised.logged))],
        ),
    ]
    if count >= _limits.DEFER_DOCUMENTS:
        statements.append(_deferred(scope_key, family, last, count))
    else:
        held = keys[tokenised.positions]
        statements.append(
            _segment(scope_key, family, segment, tokenised.terms, tokenised.bounds, held, tokenised.tfs)
        )
    if (
        last // _limits.PRUNE_EVERY != generation // _limits.PRUNE_EVERY
    ):  # crossed a multiple, as one by one would
        statements.append(_pruning(scope_key, family, last))
    return statements


def _segment(
    scope_key: int,
    family: str,
    segment: int,
    terms: Sequence[str],
    bounds: Sequence[int],
    held: npt.NDArray[np.int64],
    tfs: npt.NDArray[np.int32],
) -> Statement:
    """A row per term: term i's postings are the documents held[bounds[i]:bounds[i + 1]] with
    their term frequencies."""
    # In primary-key order (by term): the B-tree then fills page by page instead of all over.
    return (
        "INSERT INTO search_segments (scope_key, family, term, segment, postings) VALUES (?, ?, ?, ?, ?)",
        [
            (scope_key, family, term, segment, packed)
            for term, packed in packed_rows(segment, terms, bounds, held, tfs)
        ],
    )


def _deferred(scope_key: int, family: str, generation: int, count: int) -> Statement:
    """Leave a large write's postings in its log row. Once the family's deferred writes hold
    MERGE_DOCUMENTS documents, the store's merger merges them into a run (`_merge.py`),
    after this write's request has been answered."""
    return (
        "INSERT INTO search_pending (scope_key, family, generation, documents) VALUES (?, ?, ?, ?)",
        [(scope_key, family, generation, count)],
    )


def _merge_target(conn: Conn, scope_key: int, family: str, segment: int) -> int | None:
    """The run a merge under way moves `segment`'s postings into, if any."""
    row = conn.execute(
        "SELECT m.target FROM search_merge_sources s JOIN search_merges m ON m.scope_key = s.scope_key"
        " AND m.family = s.family WHERE s.scope_key = ? AND s.family = ? AND s.segment = ?",
        (scope_key, family, segment),
    ).fetchone()
    return None if row is None else int(row[0])


def indexed_documents(conn: Conn, family: str, doc_keys: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Which of `doc_keys` the family's index holds now."""
    found: list[int] = []
    listed = doc_keys.tolist()
    for start in range(0, len(listed), _KEYS_PER_STATEMENT):
        chunk = listed[start : start + _KEYS_PER_STATEMENT]
        found += [
            int(key)
            for (key,) in conn.execute(
                f"SELECT doc_key FROM search_docs WHERE family = ? AND doc_key IN ({marks(chunk)})",
                (family, *chunk),
            )
        ]
    return np.array(found, np.int64)


def unindex_document(conn: Conn, scope_key: int, family: str, doc_key: int, text: str) -> None:
    terms = list(document_terms(text))
    row = conn.execute(
        "SELECT segment, length FROM search_docs WHERE family = ? AND doc_key = ?", (family, doc_key)
    ).fetchone()
    if row is not None and terms:
        segment = int(row[0])
        target = _merge_target(conn, scope_key, family, segment)
        # Mid-merge, the terms merged so far hold the document in the target run's rows.
        for held_in in (segment,) if target in (None, segment) else (segment, target):
            _drop_postings(conn, scope_key, family, held_in, doc_key, terms)
    conn.execute("DELETE FROM search_docs WHERE family = ? AND doc_key = ?", (family, doc_key))
    conn.execute(
        "UPDATE search_stats SET documents = documents - 1, total_length = total_length - ?,"
        " generation = generation + 1 WHERE scope_key = ? AND family = ?",
        (0 if row is None else int(row[1]), scope_key, family),
    )
    _log_removal(conn, scope_key, family, doc_key)


def _drop_postings(
    conn: Conn, scope_key: int, family: str, segment: int, doc_key: int, terms: list[str]
) -> None:
    """Take the document out of its segment's or run's rows: one read of both tables, then the
    changes (one round trip on OceanBase); a row left without postings is deleted."""
    where = f"scope_key = ? AND family = ? AND segment = ? AND term IN ({marks(terms)})"
    params = (scope_key, family, segment, *terms)
    rewritten: dict[str, list[tuple[int | bytes, int, str, str, int]]] = {
        table: [] for table in _POSTINGS_TABLES
    }
    emptied: dict[str, list[str]] = {table: [] for table in _POSTINGS_TABLES}
    for table, term, packed in conn.execute(
        f"SELECT 0, term, postings FROM search_segments WHERE {where}"
        f" UNION ALL SELECT 1, term, postings FROM search_runs WHERE {where}",
        (*params, *params),
    ).fetchall():
        keys, tfs = unpack_postings(segment, packed)
        keep = keys != doc_key
        if keep.all():
            continue
        name = _POSTINGS_TABLES[int(table)]
        if keep.any():
            packed_kept = pack_postings(segment, keys[keep].tolist(), tfs[keep].tolist())
            rewritten[name].append((packed_kept, scope_key, family, term, segment))
        else:
            emptied[name].append(term)
    changes: list[Statement] = []
    for name in _POSTINGS_TABLES:
        changes.append(
            (
                f"UPDATE {name} SET postings = ? WHERE scope_key = ? AND family = ? AND term = ? AND segment = ?",
                rewritten[name],
            )
        )
        if emptied[name]:
            changes.append(
                (
                    f"DELETE FROM {name} WHERE scope_key = ? AND family = ? AND segment = ?"
                    f" AND term IN ({marks(emptied[name])})",
                    [(scope_key, family, segment, *emptied[name])],
                )
            )
    conn.execute_all(changes)  # an UPDATE per term, all in one round trip on OceanBase


def forget_documents(conn: Conn, scope_key: int, family: str, doc_keys: Sequence[int]) -> None:
    """Take erased documents (already unindexed) out of the logged writes that added them: the rows
    keep their generations, so mirrors still replay every change in order, but none of their words.
    A logged write's documents have keys from its `doc_key` up; the log holds a few thousand rows
    per family at most, and erasure is rare."""
    if not doc_keys:
        return
    gone = set(doc_keys)
    rewrites: list[tuple[bytes, int, str, int]] = []
    for generation, base, added in conn.execute(
        "SELECT generation, doc_key, added FROM search_log WHERE scope_key = ? AND family = ?"
        " AND added IS NOT NULL AND doc_key <= ?",
        (scope_key, family, max(gone)),
    ).fetchall():
        rewritten = _log.without_documents(int(base), bytes(added), gone)
        if rewritten is not None:
            rewrites.append((rewritten, scope_key, family, int(generation)))
    sql = "UPDATE search_log SET added = ? WHERE scope_key = ? AND family = ? AND generation = ?"
    conn.execute_all([(sql, rewrites)])


def drop_index(conn: Conn, scope_key: int | None = None) -> None:
    """Delete the index rows of one Scope (or of all) but their counters, and move each
    (Scope, family)'s generation past what a mirror's log replay can bridge: every mirror of them
    rebuilds. So a Scope that SQLite later gives the same key never meets the old one's mirror."""
    where, params = ("", ()) if scope_key is None else (" WHERE scope_key = ?", (scope_key,))
    for table in (
        "search_segments",
        "search_runs",
        "search_run_sizes",
        "search_docs",
        "search_doc_lists",
        "search_log",
        "search_pending",
        "search_merges",
        "search_merge_sources",
    ):
        conn.execute(f"DELETE FROM {table}{where}", params)
    conn.execute(
        f"UPDATE search_stats SET documents = 0, total_length = 0, generation = generation + ?{where}",
        (_limits.LOG_RETAIN + 1, *params),
    )


def restart_log(conn: Conn) -> None:
    """Move every (Scope, family)'s generation past what a replay can bridge, so every mirror
    rebuilds from the tables: after the log's rows changed form (migration 8)."""
    conn.execute("UPDATE search_stats SET generation = generation + ?", (_limits.LOG_RETAIN + 1,))


def _log_removal(conn: Conn, scope_key: int, family: str, doc_key: int) -> None:
    """Record the removal under the generation just taken, for mirrors to replay."""
    generation = _generation(conn, scope_key, family)
    conn.execute(
        "INSERT INTO search_log (scope_key, family, generation, doc_key, added) VALUES (?, ?, ?, ?, NULL)",
        (scope_key, family, generation, doc_key),
    )
    if generation % _limits.PRUNE_EVERY == 0:
        _prune(conn, scope_key, family, generation)


def _generation(conn: Conn, scope_key: int, family: str) -> int:
    return int(
        conn.execute(
            "SELECT generation FROM search_stats WHERE scope_key = ? AND family = ?", (scope_key, family)
        ).fetchone()[0]
    )


def _prune(conn: Conn, scope_key: int, family: str, generation: int) -> None:
    conn.executemany(*_pruning(scope_key, family, generation))


def _pruning(scope_key: int, family: str, generation: int) -> Statement:
    """Forget log rows older than LOG_RETAIN generations, but a deferred write's (its postings are
    only there) and those newer than the family's document list (`_doclists.py`): the list is
    brought up to date from them. Were they gone, bringing it up to date (and a fresh reader)
    would read every document again, the relisting under the Scope's lock, each time the merger
    thread came to it later than LOG_RETAIN generations."""
    return (
        "DELETE FROM search_log WHERE scope_key = ? AND family = ? AND generation <= ? AND generation NOT IN"
        " (SELECT generation FROM search_pending WHERE scope_key = ? AND family = ?)"
        " AND NOT EXISTS (SELECT 1 FROM search_doc_lists d WHERE d.scope_key = ? AND d.family = ?"
        " AND d.generation < search_log.generation)",
        [(scope_key, family, generation - _limits.LOG_RETAIN, scope_key, family, scope_key, family)],
    )
