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
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np
import numpy.typing as npt

from ..recall.bm25 import TermPostings, document_terms, term_weights
from . import index_log
from .conn import Conn
from .search_mirror import FamilyMirror, SearchMirror

# Keep this many generations of `search_log` per (Scope, family); a mirror further behind rebuilds.
LOG_RETAIN = 4096
_PRUNE_EVERY = 256
_BIG_ENDIAN = sys.byteorder == "big"
_MAX_OFFSET = 2**32 - 1


def pack_postings(segment: int, doc_keys: Sequence[int], tfs: Sequence[int]) -> int | bytes:
    """A term's postings in one segment: the term frequency alone when its one document is the
    segment's own, else the term frequencies as little-endian int32 followed by each document's
    key less the segment's as little-endian uint32 (a multiple of 8 bytes)."""
    if len(doc_keys) == 1 and doc_keys[0] == segment:
        return int(tfs[0])
    return _int32_bytes(tfs) + _offsets(segment, doc_keys)


def unpack_postings(segment: int, packed: int | bytes) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int32]]:
    """(document keys, term frequencies) of a row packed by `pack_postings`."""
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


def _offsets(segment: int, doc_keys: Sequence[int] | npt.NDArray[np.int64]) -> bytes:
    offsets = np.asarray(doc_keys, np.int64) - segment
    if len(offsets) and offsets.max() > _MAX_OFFSET:  # the segment is the smallest key: none is below
        raise ValueError("document keys too far apart for one index segment")
    return offsets.astype("<u4").tobytes()


def _int32_bytes(values: Sequence[int]) -> bytes:
    packed = array("i", values)
    if _BIG_ENDIAN:
        packed.byteswap()
    return packed.tobytes()


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
    counted = [document_terms(text) for text in texts]
    lengths = [sum(terms.values()) for terms in counted]
    if len(counted) == 1:  # a single remember: each term's one posting is the document's
        terms = sorted(counted[0])
        tfs = np.array([counted[0][term] for term in terms], np.int32)
        positions = np.zeros(len(terms), np.int64)
        bounds = np.arange(len(terms) + 1)
    else:
        # Grouped by term with C-level passes (a dict lookup per posting, then numpy) rather than a
        # Python loop per posting: a batch of 500 entries holds some 30,000.
        every = list(chain.from_iterable(counted))
        terms = sorted(set(every))
        number = {term: i for i, term in enumerate(terms)}
        ids = np.fromiter(map(number.__getitem__, every), np.int64, len(every))
        order = np.argsort(ids, kind="stable")  # stable: each term's documents stay in text order
        sizes = np.fromiter(map(len, counted), np.int64, len(counted))
        positions = np.repeat(np.arange(len(counted)), sizes)[order]
        tfs = np.fromiter(chain.from_iterable(c.values() for c in counted), np.int32, len(every))[order]
        bounds = np.concatenate(([0], np.cumsum(np.bincount(ids, minlength=len(terms)))))
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
    held = keys[tokenised.positions]
    tfs = tokenised.tfs
    offsets, packed, singles = _offsets(segment, held), tfs.astype("<i4").tobytes(), tfs.tolist()
    rows: list[tuple[int, str, str, int, int | bytes]] = []
    for term, start, end in zip(tokenised.terms, tokenised.bounds, tokenised.bounds[1:], strict=False):
        if end - start == 1 and held[start] == segment:
            rows.append((scope_key, family, term, segment, singles[start]))
        else:
            rows.append(
                (scope_key, family, term, segment, packed[4 * start : 4 * end] + offsets[4 * start : 4 * end])
            )
    # In primary-key order (by term): the B-tree then fills page by page instead of all over.
    conn.executemany(
        "INSERT INTO search_segments (scope_key, family, term, segment, postings) VALUES (?, ?, ?, ?, ?)",
        rows,
    )
    conn.execute(
        "INSERT INTO search_log (scope_key, family, generation, doc_key, added) VALUES (?, ?, ?, ?, ?)",
        (scope_key, family, last, segment, index_log.pack(segment, keys, tokenised.logged)),
    )
    if last // _PRUNE_EVERY != (last - count) // _PRUNE_EVERY:  # crossed a multiple, as one by one would
        _prune(conn, scope_key, family, last)


def unindex_document(conn: Conn, scope_key: int, family: str, doc_key: int, text: str) -> None:
    terms = list(document_terms(text))
    row = conn.execute(
        "SELECT segment, length FROM search_docs WHERE family = ? AND doc_key = ?", (family, doc_key)
    ).fetchone()
    if row is not None and terms:
        _drop_postings(conn, scope_key, family, int(row[0]), doc_key, terms)
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
    """Take the document out of its segment's rows: one read, then a statement per kind of change
    (each a round trip on OceanBase); a row left without postings is deleted."""
    where = f"scope_key = ? AND family = ? AND segment = ? AND term IN ({_marks(terms)})"
    rewritten: list[tuple[int | bytes, int, str, str, int]] = []
    emptied: list[str] = []
    for term, packed in conn.execute(
        f"SELECT term, postings FROM search_segments WHERE {where}", (scope_key, family, segment, *terms)
    ).fetchall():
        keys, tfs = unpack_postings(segment, packed)
        keep = keys != doc_key
        if keep.all():
            continue
        if keep.any():
            rewritten.append(
                (
                    pack_postings(segment, keys[keep].tolist(), tfs[keep].tolist()),
                    scope_key,
                    family,
                    term,
                    segment,
                )
            )
        else:
            emptied.append(term)
    if rewritten:
        conn.executemany(
            "UPDATE search_segments SET postings = ? WHERE scope_key = ? AND family = ? AND term = ? AND segment = ?",
            rewritten,
        )
    if emptied:
        conn.execute(
            f"DELETE FROM search_segments WHERE scope_key = ? AND family = ? AND segment = ? AND term IN ({_marks(emptied)})",
            (scope_key, family, segment, *emptied),
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
    for table in ("search_segments", "search_docs", "search_log"):
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
    conn.execute(
        "DELETE FROM search_log WHERE scope_key = ? AND family = ? AND generation <= ?",
        (scope_key, family, generation - LOG_RETAIN),
    )


def _marks(values: Sequence[object]) -> str:
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
            f" WHERE family = ? AND scope_key IN ({_marks(scope_keys)})",
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
    rows: dict[str, list[tuple[int, int]]] = {term: [] for term in terms}
    for term, segment, packed in conn.execute(
        "SELECT term, segment, postings FROM search_segments"
        f" WHERE scope_key = ? AND family = ? AND term IN ({_marks(terms)})",
        (scope_key, family, *terms),
    ):
        tf = _single(packed)
        if tf is not None:  # the common single posting, without arrays
            rows[term].append((int(segment), tf))
            continue
        keys, tfs = unpack_postings(int(segment), packed)
        rows[term].extend(zip(keys.tolist(), tfs.tolist(), strict=True))
    return rows
