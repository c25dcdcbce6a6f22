"""The shared full-text index (`recall/bm25.py`) in SQL: upkeep and log inside writes, ranked reads
through the in-memory mirror (`search_mirror.py`).

Postings are stored a row per term and index write (`search_segments`): the row holds the term's
(document, term frequency) pairs among the documents that write indexed, packed. A batch of 500
entries then inserts about 2,000 rows instead of 30,000 single postings into the term-clustered
table, which is what bounded ingest; a term's postings are still one range read. A segment is
named by the smallest document key it holds, and keys are packed as offsets from it. A row whose
one posting is the segment's own document (every row of a single remember) holds just its term
frequency as an integer: Python's sqlite3 binds a blob (or a NULL) about 1 µs slower, a third of
such a row's insert. Each document records its segment so that unindexing rewrites only the rows
that hold it.

Large writes (a batch, an import page) take a second path: their postings wait in their log row
and are merged, some thousands of documents at a time, into runs (`search_runs`), tables of the
same rows clustered by run instead of by term, which runs of one size merge into ever larger ones.
A term's postings are then its segment rows, a seek into each run, and the waiting writes. Merges
run on the store's merger thread, a range of terms per transaction (`index_merge.py`), never in
the request whose write made one due.
"""

from __future__ import annotations

import struct
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain, pairwise
from typing import cast

import numpy as np
import numpy.typing as npt

from ..recall.batch_terms import grouped_terms
from ..recall.bm25 import TermPostings, document_terms, term_weights
from . import index_log
from .conn import Conn
from .search_mirror import FamilyMirror, SearchMirror

# Keep this many generations of `search_log` per (Scope, family); a mirror further behind rebuilds.
LOG_RETAIN = 4096
# A write of this many documents or more leaves its postings in its log row (`search_pending` names
# it) until the family's deferred writes hold MERGE_DOCUMENTS documents, then all go into one run
# (`search_runs`, merged in the background by `index_merge.py`): a row per distinct term among
# thousands of documents, written in one stretch of a table clustered by run. Rows per term and
# write in the term-clustered `search_segments` would land all over it, dirtying most of its pages
# at every merge (merges slowed as the Scope grew).
DEFER_DOCUMENTS = 64
MERGE_DOCUMENTS = 4096
# RUN_FANOUT runs of one size class (MERGE_DOCUMENTS × RUN_FANOUT^k documents and up) merge into
# one, so a term read seeks a few runs per size class, whatever the Scope's size.
RUN_FANOUT = 8
_KEYS_PER_STATEMENT = 500
_POSTINGS_TABLES = ("search_segments", "search_runs")
_PRUNE_EVERY = 256
_MAX_OFFSET = 2**32 - 1
_SINGLE_ROW = struct.Struct("<iI")  # a single posting as a blob: its tf, offset 0


def pack_postings(segment: int, doc_keys: Sequence[int], tfs: Sequence[int]) -> int | bytes:
    """A term's postings in one segment: the term frequency alone when its one document is the
    segment's own, else the term frequencies as little-endian int32 followed by each document's
    key less the segment's as little-endian uint32 (a multiple of 8 bytes)."""
    held = np.asarray(doc_keys, np.int64)
    return packed_rows(segment, [""], [0, len(held)], held, np.asarray(tfs, np.int32))[0][1]


def unpack_postings(segment: int, packed: int | bytes) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int32]]:
    """(document keys, term frequencies) of a row packed by `pack_postings`. Cold term reads decode
    rows one by one, and `_unpack_rows`'s set-up costs more than one row (86 -> 100 ms for 300 terms)."""
    tf = _single(packed)
    if tf is not None:
        return np.array([segment], np.int64), np.array([tf], np.int32)
    blob = bytes(packed)
    count = len(blob) // 8
    offsets = np.frombuffer(blob, "<u4", count, 4 * count)
    return offsets.astype(np.int64) + segment, np.frombuffer(blob, "<i4", count)


def _single(packed: int | bytes) -> int | None:
    """The term frequency of a single-posting row, else None. SQLite gives the integer back;
    OceanBase's LONGBLOB keeps its decimal digits, fewer than 8 (a text has under 10^7 words)."""
    if isinstance(packed, int):
        return packed
    return int(packed) if len(packed) < 8 else None


def single_posting(packed: int | bytes) -> bool:
    """Whether a postings row holds one posting, its tf alone (see `_single`)."""
    return _single(packed) is not None


def _offsets(segment: int, doc_keys: Sequence[int] | npt.NDArray[np.int64]) -> bytes:
    offsets = np.asarray(doc_keys, np.int64) - segment
    if len(offsets) and offsets.max() > _MAX_OFFSET:  # the segment is the smallest key: none is below
        raise ValueError("document keys too far apart for one index segment")
    return offsets.astype("<u4").tobytes()


@dataclass(frozen=True, slots=True)
class TokenisedDocuments:
    """What indexing some texts writes, worked out before the write transaction (it needs no
    database), so a writer holds the write lock only for its statements. Postings name documents
    by their position among the texts until the write knows their keys."""

    lengths: list[int]  # each document's, in tokens
    terms: list[str]  # the distinct terms, sorted: the table's primary-key order
    positions: npt.NDArray[np.int64]  # term i's documents are positions[bounds[i]:bounds[i + 1]]
    bounds: list[int]
    tfs: npt.NDArray[np.int32]  # the term frequencies in the same order
    logged: bytes  # the log row but the documents' keys (index_log.pack_tail)


def tokenise_documents(texts: Sequence[str]) -> TokenisedDocuments:
    if len(texts) == 1:  # a single remember: each term's one posting is the document's
        single = document_terms(texts[0])
        lengths = [sum(single.values())]
        terms = sorted(single)
        tfs = np.array([single[term] for term in terms], np.int32)
        positions = np.zeros(len(terms), np.int64)
        bounds = np.arange(len(terms) + 1)
    elif len(texts) < DEFER_DOCUMENTS:
        # A small write (an import page, an artifact): grouped by term with C-level passes, a dict
        # lookup per posting and one sort; `grouped_terms` would set aside more scratch for its
        # sorts than such a write's postings take.
        counted = [document_terms(text) for text in texts]
        lengths = [sum(counts.values()) for counts in counted]
        every = list(chain.from_iterable(counted))
        terms = sorted(set(every))
        number = {term: i for i, term in enumerate(terms)}
        ids = np.fromiter(map(number.__getitem__, every), np.int64, len(every))
        order = np.argsort(ids, kind="stable")  # stable: each term's documents stay in text order
        sizes = np.fromiter(map(len, counted), np.int64, len(counted))
        positions = np.repeat(np.arange(len(counted)), sizes)[order]
        tfs = np.fromiter(chain.from_iterable(c.values() for c in counted), np.int32, len(every))[order]
        bounds = np.concatenate(([0], np.cumsum(np.bincount(ids, minlength=len(terms)))))
    else:  # a batch: CJK counted in numpy for the whole batch at once
        grouped = grouped_terms(texts)
        terms, bounds, positions, tfs, lengths = (
            grouped.terms,
            grouped.bounds,
            grouped.positions,
            grouped.tfs,
            grouped.lengths,
        )
    return TokenisedDocuments(
        lengths,
        terms,
        positions,
        bounds.tolist(),
        tfs,
        index_log.pack_tail(lengths, terms, bounds, positions, tfs),
    )


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
    count, segment = len(doc_keys), min(doc_keys)
    conn.execute(
        "INSERT INTO search_stats (scope_key, family, documents, total_length, generation) VALUES (?, ?, ?, ?, ?)"
        " ON CONFLICT (scope_key, family) DO UPDATE SET documents = documents + excluded.documents,"
        " total_length = total_length + excluded.total_length, generation = generation + excluded.generation",
        (scope_key, family, count, sum(tokenised.lengths), count),
    )
    last = _generation(conn, scope_key, family)
    keys = np.asarray(doc_keys, np.int64)
    conn.executemany(
        "INSERT INTO search_docs (family, doc_key, scope_key, length, segment) VALUES (?, ?, ?, ?, ?)",
        [
            (family, key, scope_key, length, segment)
            for key, length in zip(doc_keys, tokenised.lengths, strict=True)
        ],
    )
    conn.execute(
        "INSERT INTO search_log (scope_key, family, generation, doc_key, added) VALUES (?, ?, ?, ?, ?)",
        (scope_key, family, last, segment, index_log.pack(segment, keys, tokenised.logged)),
    )
    if count >= DEFER_DOCUMENTS:
        _defer(conn, scope_key, family, last, count)
    else:
        _insert_segment(
            conn,
            scope_key,
            family,
            segment,
            tokenised.terms,
            tokenised.bounds,
            keys[tokenised.positions],
            tokenised.tfs,
        )
    if last // _PRUNE_EVERY != (last - count) // _PRUNE_EVERY:  # crossed a multiple, as one by one would
        _prune(conn, scope_key, family, last)


def _insert_segment(
    conn: Conn,
    scope_key: int,
    family: str,
    segment: int,
    terms: Sequence[str],
    bounds: Sequence[int],
    held: npt.NDArray[np.int64],
    tfs: npt.NDArray[np.int32],
) -> None:
    """A row per term: term i's postings are the documents held[bounds[i]:bounds[i + 1]] with
    their term frequencies."""
    # In primary-key order (by term): the B-tree then fills page by page instead of all over.
    conn.executemany(
        "INSERT INTO search_segments (scope_key, family, term, segment, postings) VALUES (?, ?, ?, ?, ?)",
        [
            (scope_key, family, term, segment, packed)
            for term, packed in packed_rows(segment, terms, bounds, held, tfs)
        ],
    )


def packed_rows(
    segment: int,
    terms: Sequence[str],
    bounds: Sequence[int],
    held: npt.NDArray[np.int64],
    tfs: npt.NDArray[np.int32],
) -> list[tuple[str, int | bytes]]:
    """Each term with its postings packed as `pack_postings` does, from arrays already grouped.
    Every blob is laid out in one buffer by array operations and a row takes a slice of it: a run
    has thousands of terms, and a slice costs less than packing each row's arrays."""
    edges = np.asarray(bounds, np.int64)
    starts, sizes = edges[:-1], np.diff(edges)
    words = np.empty(2 * len(held), "<u4")
    offsets = _halves(sizes)
    words[~offsets] = tfs.astype("<i4").view("<u4")
    words[offsets] = np.frombuffer(_offsets(segment, held), "<u4")
    buffer = words.tobytes()
    byte_edges = (8 * edges).tolist()
    values: list[int | bytes] = [buffer[a:b] for a, b in pairwise(byte_edges)]
    alone = np.flatnonzero(sizes == 1)
    alone = alone[held[starts[alone]] == segment]
    for at, tf in zip(alone.tolist(), tfs[starts[alone]].tolist(), strict=True):
        values[at] = int(tf)
    return list(zip(terms, values, strict=True))


def _defer(conn: Conn, scope_key: int, family: str, generation: int, count: int) -> None:
    """Leave a large write's postings in its log row. Once the family's deferred writes hold
    MERGE_DOCUMENTS documents, the store's merger merges them into a run (`index_merge.py`),
    after this write's request has been answered."""
    conn.execute(
        "INSERT INTO search_pending (scope_key, family, generation, documents) VALUES (?, ?, ?, ?)",
        (scope_key, family, generation, count),
    )


def _pending(conn: Conn, scope_key: int, family: str) -> list[tuple[index_log.LoggedWrite, str | None]]:
    """The writes whose postings are still (partly) only in their log rows, each with the last
    term a merge under way has already moved into its target run (None: none)."""
    progress = _merge_progress(conn, scope_key, family)
    return [
        (
            index_log.unpack(int(base), bytes(added), lazy=True),
            progress[0] if progress is not None and int(generation) in progress[1] else None,
        )
        for generation, base, added in conn.execute(
            "SELECT p.generation, l.doc_key, l.added FROM search_pending p JOIN search_log l"
            " ON l.scope_key = p.scope_key AND l.family = p.family AND l.generation = p.generation"
            " WHERE p.scope_key = ? AND p.family = ?",
            (scope_key, family),
        )
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


def _merge_target(conn: Conn, scope_key: int, family: str, segment: int) -> int | None:
    """The run a merge under way moves `segment`'s postings into, if any."""
    row = conn.execute(
        "SELECT m.target FROM search_merge_sources s JOIN search_merges m ON m.scope_key = s.scope_key"
        " AND m.family = s.family WHERE s.scope_key = ? AND s.family = ? AND s.segment = ?",
        (scope_key, family, segment),
    ).fetchone()
    return None if row is None else int(row[0])


@dataclass(frozen=True, slots=True)
class Grouped:
    """Postings grouped by term: term i's are held[bounds[i]:bounds[i + 1]] with their tfs."""

    terms: list[str]
    bounds: list[int]
    held: npt.NDArray[np.int64]
    tfs: npt.NDArray[np.int32]


def by_term(
    block_terms: list[str],
    starts: npt.NDArray[np.int64],
    sizes: npt.NDArray[np.int64],
    held: npt.NDArray[np.int64],
    tfs: npt.NDArray[np.int32],
) -> Grouped:
    """Blocks of postings (block i: the term block_terms[i], postings [starts[i], starts[i] +
    sizes[i]) of held and tfs) regrouped by term, a term's blocks in their order. Sorting the
    blocks, not the postings, keeps a merge's sort to a few thousand items."""
    union = sorted(set(block_terms))
    number = {term: i for i, term in enumerate(union)}
    ids = np.fromiter(map(number.__getitem__, block_terms), np.int64, len(block_terms))
    order = np.argsort(ids, kind="stable")
    taken = _ranges(starts[order], sizes[order])
    counts = np.bincount(ids, sizes, minlength=len(union)).astype(np.int64)
    return Grouped(union, np.concatenate(([0], np.cumsum(counts))).tolist(), held[taken], tfs[taken])


def _ranges(starts: npt.NDArray[np.int64], sizes: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """The indexes starts[0] .. starts[0] + sizes[0] - 1, then those of the next range, and so on."""
    ends = np.cumsum(sizes)
    shifts: npt.NDArray[np.int64] = np.repeat(starts - (ends - sizes), sizes)
    return np.arange(len(shifts), dtype=np.int64) + shifts


def unpack_rows(
    segments: list[int], packed: list[int | bytes]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int32]]:
    """`unpack_postings` of many rows at once: each row's number of postings, then the documents
    and term frequencies of them all, row after row."""
    blobs = [
        _SINGLE_ROW.pack(tf, 0) if (tf := _single(value)) is not None else cast(bytes, value)
        for value in packed
    ]
    sizes = np.fromiter(map(len, blobs), np.int64, len(blobs)) // 8
    words = np.frombuffer(b"".join(blobs), "<u4")
    offsets = _halves(sizes)
    held = words[offsets] + np.repeat(np.array(segments, np.int64), sizes)
    tfs = words[~offsets].view("<i4")
    return sizes, held, tfs


def _halves(sizes: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
    """Which words of packed postings laid end to end (`sizes[i]` postings each: their tfs, then
    their offsets) are offsets."""
    return np.repeat(np.tile(np.array([False, True]), len(sizes)), np.repeat(sizes, 2))


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
    """Take the document out of its segment's or run's rows: one read of both tables, then a
    statement per kind of change (each a round trip on OceanBase); a row left without postings is
    deleted."""
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
    for name in _POSTINGS_TABLES:
        if rewritten[name]:
            conn.executemany(
                f"UPDATE {name} SET postings = ? WHERE scope_key = ? AND family = ? AND term = ? AND segment = ?",
                rewritten[name],
            )
        if emptied[name]:
            conn.execute(
                f"DELETE FROM {name} WHERE scope_key = ? AND family = ? AND segment = ?"
                f" AND term IN ({marks(emptied[name])})",
                (scope_key, family, segment, *emptied[name]),
            )


def forget_documents(conn: Conn, scope_key: int, family: str, doc_keys: Sequence[int]) -> None:
    """Take erased documents (already unindexed) out of the logged writes that added them: the rows
    keep their generations, so mirrors still replay every change in order, but none of their words.
    A logged write's documents have keys from its `doc_key` up; the log holds a few thousand rows
    per family at most, and erasure is rare."""
    if not doc_keys:
        return
    gone = set(doc_keys)
    for generation, base, added in conn.execute(
        "SELECT generation, doc_key, added FROM search_log WHERE scope_key = ? AND family = ?"
        " AND added IS NOT NULL AND doc_key <= ?",
        (scope_key, family, max(gone)),
    ).fetchall():
        rewritten = index_log.without_documents(int(base), bytes(added), gone)
        if rewritten is not None:
            conn.execute(
                "UPDATE search_log SET added = ? WHERE scope_key = ? AND family = ? AND generation = ?",
                (rewritten, scope_key, family, generation),
            )


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
        "search_log",
        "search_pending",
        "search_merges",
        "search_merge_sources",
    ):
        conn.execute(f"DELETE FROM {table}{where}", params)
    conn.execute(
        f"UPDATE search_stats SET documents = 0, total_length = 0, generation = generation + ?{where}",
        (LOG_RETAIN + 1, *params),
    )


def restart_log(conn: Conn) -> None:
    """Move every (Scope, family)'s generation past what a replay can bridge, so every mirror
    rebuilds from the tables: after the log's rows changed form (migration 8)."""
    conn.execute("UPDATE search_stats SET generation = generation + ?", (LOG_RETAIN + 1,))


def _log_removal(conn: Conn, scope_key: int, family: str, doc_key: int) -> None:
    """Record the removal under the generation just taken, for mirrors to replay."""
    generation = _generation(conn, scope_key, family)
    conn.execute(
        "INSERT INTO search_log (scope_key, family, generation, doc_key, added) VALUES (?, ?, ?, ?, NULL)",
        (scope_key, family, generation, doc_key),
    )
    if generation % _PRUNE_EVERY == 0:
        _prune(conn, scope_key, family, generation)


def _generation(conn: Conn, scope_key: int, family: str) -> int:
    return int(
        conn.execute(
            "SELECT generation FROM search_stats WHERE scope_key = ? AND family = ?", (scope_key, family)
        ).fetchone()[0]
    )


def _prune(conn: Conn, scope_key: int, family: str, generation: int) -> None:
    """Forget log rows older than LOG_RETAIN generations, but a deferred write's (its postings are
    only there)."""
    conn.execute(
        "DELETE FROM search_log WHERE scope_key = ? AND family = ? AND generation <= ? AND generation NOT IN"
        " (SELECT generation FROM search_pending WHERE scope_key = ? AND family = ?)",
        (scope_key, family, generation - LOG_RETAIN, scope_key, family),
    )


def marks(values: Sequence[object]) -> str:
    return ", ".join("?" * len(values))


def ranked(
    conn: Conn, mirror: SearchMirror, scope_keys: Sequence[int], family: str, terms: Sequence[str], limit: int
) -> dict[int, list[tuple[int, float]]]:
    """The best `doc_key`s of each Scope's family with their scores, best first.

    The caller holds `mirror.lock`. A transaction begun after taking it sees everything the mirror
    has replayed; one begun earlier (inside `Store.reading()`) may not, and ranks as of its own
    snapshot all the same, see `_synced`.
    """
    if not terms or not scope_keys:
        return {key: [] for key in scope_keys}
    stats = {
        int(row[0]): (int(row[1]), int(row[2]), int(row[3]))
        for row in conn.execute(
            "SELECT scope_key, generation, documents, total_length FROM search_stats"
            f" WHERE family = ? AND scope_key IN ({marks(scope_keys)})",
            (family, *scope_keys),
        )
    }
    found: dict[int, list[tuple[int, float]]] = {}
    for scope_key in scope_keys:
        generation, documents, total_length = stats.get(scope_key, (0, 0, 0))
        if documents == 0:
            found[scope_key] = []
            continue
        family_mirror, alive = _synced(conn, mirror, scope_key, family, generation)
        borrowed: dict[str, TermPostings] = {}
        missing = family_mirror.missing(terms, generation)
        if missing:
            for term, rows in _read_terms(conn, scope_key, family, missing).items():
                postings = family_mirror.postings_of(rows)
                if family_mirror.generation == generation:
                    family_mirror.install(term, postings)
                else:
                    borrowed[term] = postings
        weights = term_weights(terms, family_mirror.frequencies(terms, borrowed, alive), documents)
        found[scope_key] = family_mirror.top(weights, total_length / documents, limit, borrowed, alive)
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
        return FamilyMirror(generation, _documents(conn, scope_key, family)), None
    if current is not None and current.generation < generation and not current.stale:
        rows = [
            (int(g), int(k), None if added is None else index_log.unpack(int(k), bytes(added)))
            for g, k, added in conn.execute(
                "SELECT generation, doc_key, added FROM search_log"
                " WHERE scope_key = ? AND family = ? AND generation > ? AND generation <= ? ORDER BY generation",
                (scope_key, family, current.generation, generation),
            )
        ]
        # A row takes a generation per document it adds; rows the log no longer keeps leave a gap.
        taken = sum(1 if logged is None else len(logged.doc_keys) for _, _, logged in rows)
        if taken == generation - current.generation:
            current.replay(rows)
    if current is not None and current.generation == generation and not current.stale:
        return current, None
    rebuilt = FamilyMirror(generation, _documents(conn, scope_key, family))
    mirror.put(scope_key, family, rebuilt)
    return rebuilt, None


def _documents(conn: Conn, scope_key: int, family: str) -> list[tuple[int, int]]:
    return [
        (int(k), int(length))
        for k, length in conn.execute(
            "SELECT doc_key, length FROM search_docs WHERE scope_key = ? AND family = ?", (scope_key, family)
        )
    ]


def _read_terms(
    conn: Conn, scope_key: int, family: str, terms: list[str]
) -> dict[str, list[tuple[int, int]]]:
    """Each term's (doc_key, tf) postings: its segment rows, its rows in each run, and those of
    deferred writes not merged yet. A deferred write still lists documents unindexed since; a
    mirror skips those it does not know and masks the ones it knows as removed."""
    rows: dict[str, list[tuple[int, int]]] = {term: [] for term in terms}
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
        tf = _single(packed)
        if tf is not None:  # the common single posting, without arrays
            rows[term].append((int(segment), tf))
            continue
        keys, tfs = unpack_postings(int(segment), packed)
        rows[term].extend(zip(keys.tolist(), tfs.tolist(), strict=True))
    for write, merged_through in _pending(conn, scope_key, family):
        for term in terms:
            if merged_through is not None and term <= merged_through:
                continue  # in the target run already, read above
            at = bisect_left(write.terms, term)
            if at < len(write.terms) and write.terms[at] == term:
                start, end = int(write.bounds[at]), int(write.bounds[at + 1])
                held = write.doc_keys[write.positions[start:end]]
                rows[term].extend(zip(held.tolist(), write.tfs[start:end].tolist(), strict=True))
    return rows
