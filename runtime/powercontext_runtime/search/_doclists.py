"""A family's documents (key, length) packed into a few rows, so a fresh mirror reads a million
documents as a few blobs instead of a row (and a Python tuple) each.

`search_doc_lists` holds, per (Scope, family), its live documents as of one `generation`, cut by
key into stretches of at most LIST_CHUNK documents: a row per stretch, named by its smallest key
(`base`), its value packed like a postings row (`_postings.py`) with the lengths in place of the
term frequencies. A reader at generation G loads the list (at S <= G) and applies the log rows
(S, G]; if the log no longer holds them all, or there is no list, it reads `search_docs` whole,
as before. Either way the result is the same array of the documents live at G, in key order.

The index merger's thread keeps the lists (`relist`): once a family holds LIST_DOCUMENTS
documents and its list is LIST_EVERY generations old (or missing), it applies the log to it in
one write transaction and rewrites only the stretches that changed (an append touches the last).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from typing import Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from . import _log
from ._conn import Conn
from ._limits import MAX_KEY_OFFSET
from ._mirror import LogRow
from ._postings import pack_postings, row_views

# Documents per list row: 128 KiB packed, no larger than a common term's row in a run, so a
# statement stays well within OceanBase's packet; a million documents are 62 rows.
LIST_CHUNK = 16_384
# Families smaller than this read `search_docs` whole quickly enough and keep no list.
LIST_DOCUMENTS = 4096
# Relist after this many generations, well before LOG_RETAIN prunes the log a reader needs to
# bring the list up to date (half of it at most is replayed by a fresh mirror).
LIST_EVERY = 2048

Docs = npt.NDArray[np.int64]  # rows of (doc_key, length), in key order
# Bytes read from the front of each log row for a list of documents: a row's documents and
# lengths take 8 bytes each after a 12-byte header, so a write of up to 2,046 documents (a batch
# holds 1,000 at most) fits, and its postings are not read. A longer row is read again whole.
DOCUMENTS_HEAD = 16_384


class _Added(Protocol):
    """What a log row added, as far as a list of documents cares."""

    @property
    def doc_keys(self) -> npt.NDArray[np.int64]: ...

    @property
    def lengths(self) -> npt.NDArray[np.int32]: ...


Added = TypeVar("Added", bound=_Added)
# The log rows of generations (after, through] of a (Scope, family), oldest first.
_SINCE = (
    " FROM search_log WHERE scope_key = ? AND family = ? AND generation > ? AND generation <= ?"
    " ORDER BY generation"
)


def logged_since(conn: Conn, scope_key: int, family: str, after: int, through: int) -> list[LogRow] | None:
    """The log rows of generations (after, through], oldest first, unpacked whole; None when the
    log no longer holds every one of them (rows older than LOG_RETAIN generations are pruned)."""
    rows = [
        (int(g), int(k), None if added is None else _log.unpack(int(k), bytes(added)))
        for g, k, added in conn.execute(
            "SELECT generation, doc_key, added" + _SINCE, (scope_key, family, after, through)
        )
    ]
    return _whole(rows, after, through)


def _documents_since(
    conn: Conn, scope_key: int, family: str, after: int, through: int
) -> list[tuple[int, int, _log.LoggedDocuments | None]] | None:
    """`logged_since`, reading of each row only the front that holds its documents."""
    heads = conn.execute(
        "SELECT generation, doc_key, substr(added, 1, ?)" + _SINCE,
        (DOCUMENTS_HEAD, scope_key, family, after, through),
    ).fetchall()
    rows = []
    for g, k, head in heads:
        if head is not None and len(head) < _log.documents_end(bytes(head)):
            head = conn.execute(
                "SELECT added FROM search_log WHERE scope_key = ? AND family = ? AND generation = ?",
                (scope_key, family, g),
            ).fetchone()[0]
        rows.append((int(g), int(k), None if head is None else _log.unpack_documents(int(k), bytes(head))))
    return _whole(rows, after, through)


def _whole(
    rows: list[tuple[int, int, Added | None]], after: int, through: int
) -> list[tuple[int, int, Added | None]] | None:
    """`rows` if they hold every generation of (after, through], else None: a row takes a
    generation per document it adds, and rows the log no longer keeps leave a gap."""
    taken = sum(1 if logged is None else len(logged.doc_keys) for _, _, logged in rows)
    return rows if taken == through - after else None


def documents(conn: Conn, scope_key: int, family: str, generation: int) -> Docs:
    """The family's live documents at `generation` (the reader's snapshot's), in key order: its
    list brought up to date from the log, else every `search_docs` row."""
    listed = _listed(conn, scope_key, family)
    if listed is not None and listed[0] <= generation:
        # Only the rows' documents: right after a fast ingest the list may be hundreds of
        # batches behind, and unpacking their postings took a fresh reader a second and a GiB.
        rows = _documents_since(conn, scope_key, family, listed[0], generation)
        if rows is not None:
            added = _only_added(rows)
            last = _last_key(listed[1])
            if added is not None and (last is None or not len(added[0]) or added[0][0] > last):
                return _joined(listed[1], added)  # the ingest's batches go on the end, in one array
            return applied(_joined(listed[1]), rows)
    return _read_whole(conn, scope_key, family)


def _read_whole(conn: Conn, scope_key: int, family: str) -> Docs:
    """Every (doc_key, length) row of the family, in key order: a million of them convert in C,
    not a Python call per value (a Scope's first query at 1M entries spent 2.6 s on that)."""
    rows = conn.execute(
        "SELECT doc_key, length FROM search_docs WHERE scope_key = ? AND family = ?", (scope_key, family)
    ).fetchall()
    docs = np.array(rows, np.int64).reshape(-1, 2)
    if len(docs) > 1 and not bool((docs[1:, 0] > docs[:-1, 0]).all()):
        docs = docs[np.argsort(docs[:, 0], kind="stable")]
    return docs


def applied(docs: Docs, rows: Sequence[tuple[int, int, _Added | None]]) -> Docs:
    """`docs` after the log rows, in generation order: a document's last change (added with its
    length, or removed) decides whether it is there, whatever it was before."""
    appended = _appended(docs, rows)
    if appended is not None:
        return appended
    keys: list[npt.NDArray[np.int64]] = []
    lengths: list[npt.NDArray[np.int64]] = []
    present: list[npt.NDArray[np.bool_]] = []
    for _, key, logged in rows:
        if logged is None:
            keys.append(np.array([key], np.int64))
            lengths.append(np.zeros(1, np.int64))
            present.append(np.zeros(1, np.bool_))
        else:
            keys.append(logged.doc_keys.astype(np.int64))
            lengths.append(logged.lengths.astype(np.int64))
            present.append(np.ones(len(logged.doc_keys), np.bool_))
    if not keys:
        return docs
    changed = np.concatenate(keys)
    # Each changed key's last change: np.unique keeps the first of each, so look from the end.
    _, last_from_end = np.unique(changed[::-1], return_index=True)
    last = len(changed) - 1 - last_from_end
    # The documents a change touched leave (by binary search: the list is in key order).
    at = np.minimum(np.searchsorted(docs[:, 0], changed), max(len(docs) - 1, 0))
    gone = at[docs[at, 0] == changed] if len(docs) else at[:0]
    kept = docs
    if len(gone):  # a column at a time: a boolean index of the pairs' rows is several times slower
        keep = np.ones(len(docs), np.bool_)
        keep[gone] = False
        kept = np.stack([docs[:, 0][keep], docs[:, 1][keep]], axis=1)
    now = last[np.concatenate(present)[last]]
    added = np.stack([changed[now], np.concatenate(lengths)[now]], axis=1)
    merged: Docs = np.concatenate([kept, added])
    # `added` ascends (np.unique sorts); new keys usually come after every kept one.
    if len(kept) and len(added) and added[0, 0] <= kept[-1, 0]:
        merged = merged[np.argsort(merged[:, 0], kind="stable")]
    return merged


def _appended(docs: Docs, rows: Sequence[tuple[int, int, _Added | None]]) -> Docs | None:
    """`applied` when the rows only add documents, each above every key before it (an ingest's
    batches): they go on the end as they are. None otherwise. A list a long ingest left hundreds
    of batches behind is brought up to date without sorting their keys."""
    added = _only_added(rows)
    if added is None:
        return None
    keys, lengths = added
    if len(docs) and len(keys) and keys[0] <= docs[-1, 0]:
        return None
    appended: Docs = np.concatenate([docs, np.stack([keys, lengths], axis=1)])
    return appended


def _only_added(
    rows: Sequence[tuple[int, int, _Added | None]],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]] | None:
    """The keys and lengths of the documents the rows add, when they only add and in ascending key
    order (an ingest's batches); else None."""
    if not rows or any(logged is None for _, _, logged in rows):
        return None
    added = [logged for _, _, logged in rows if logged is not None]
    keys = np.concatenate([logged.doc_keys for logged in added]).astype(np.int64)
    if not bool((keys[1:] > keys[:-1]).all()):
        return None
    return keys, np.concatenate([logged.lengths for logged in added]).astype(np.int64)


def _listed(conn: Conn, scope_key: int, family: str) -> tuple[int, dict[int, int | bytes]] | None:
    """The family's list: its generation and its rows' packed values by base, or None."""
    rows = conn.execute(
        "SELECT base, generation, docs FROM search_doc_lists WHERE scope_key = ? AND family = ? ORDER BY base",
        (scope_key, family),
    ).fetchall()
    if not rows:
        return None
    return int(rows[0][1]), {
        int(base): packed if isinstance(packed, int) else bytes(packed) for base, _, packed in rows
    }


def _joined(
    chunks: dict[int, int | bytes],
    tail: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]] | None = None,
) -> Docs:
    """The list's rows decoded straight into one array, then `tail`'s keys and lengths (the caller
    sees they come after): a million documents' keys and lengths used to go through three copies
    (each row's, their concatenation, the stack) and a fourth for an ingest's batches, and a
    fresh process's first prepare faulted in each."""
    parts = [(base, *row_views(packed)) for base, packed in chunks.items()]
    listed = sum(len(offsets) for _, offsets, _ in parts)
    docs: Docs = np.empty((listed + (0 if tail is None else len(tail[0])), 2), np.int64)
    at = 0
    for base, offsets, lengths in parts:
        stop = at + len(offsets)
        np.add(offsets, np.int64(base), out=docs[at:stop, 0])
        docs[at:stop, 1] = lengths
        at = stop
    if tail is not None:
        docs[listed:, 0], docs[listed:, 1] = tail
    return docs


def _last_key(chunks: dict[int, int | bytes]) -> int | None:
    """The largest key a list holds (its rows come by base), or None when it holds none."""
    if not chunks:
        return None
    base = max(chunks)
    return base + int(row_views(chunks[base])[0][-1])


def _chunks(docs: Docs, bases: Sequence[int]) -> dict[int, int | bytes]:
    """`docs` cut at the old list's `bases` (so an unchanged stretch packs as before), every
    stretch then at most LIST_CHUNK documents whose keys lie within a row's offsets of its first."""
    keys = docs[:, 0]
    cuts = {0, len(docs)} | {int(at) for at in np.searchsorted(keys, np.asarray(bases, np.int64))}
    out: dict[int, int | bytes] = {}
    bounds = sorted(cuts)
    for start, end in pairwise(bounds):
        while start < end:
            stop = min(
                end, start + LIST_CHUNK, int(np.searchsorted(keys, keys[start] + MAX_KEY_OFFSET, "right"))
            )
            base = int(keys[start])
            out[base] = pack_postings(base, keys[start:stop], docs[start:stop, 1])
            start = stop
    return out


def due(conn: Conn) -> list[tuple[int, str]]:
    """The (Scope, family) pairs large enough for a list that have none, and those whose list is
    LIST_EVERY generations old, however small they have become since (the log keeps every row
    after a list, so a list must keep moving)."""
    return sorted(
        (int(k), str(f))
        for k, f in conn.execute(
            "SELECT s.scope_key, s.family FROM search_stats s LEFT JOIN"
            " (SELECT scope_key, family, MIN(generation) AS listed FROM search_doc_lists"
            "  GROUP BY scope_key, family) l ON l.scope_key = s.scope_key AND l.family = s.family"
            " WHERE (l.listed IS NULL AND s.documents >= ?) OR s.generation - l.listed >= ?",
            (LIST_DOCUMENTS, LIST_EVERY),
        )
    )


def relist(conn: Conn, scope_key: int, family: str) -> None:
    """Bring the family's list to its generation now, inside a write transaction (no write can
    come between what it reads and what it writes): only the rows that changed are written."""
    # Writers to the Scope queue behind this (OceanBase; SQLite's write transaction holds the
    # database lock already), so the documents read are those at the generation read.
    conn.execute("SELECT scope_key FROM scopes WHERE scope_key = ? FOR UPDATE", (scope_key,)).fetchall()
    row = conn.execute(
        "SELECT generation FROM search_stats WHERE scope_key = ? AND family = ?", (scope_key, family)
    ).fetchone()
    if row is None:
        return
    generation = int(row[0])
    listed = _listed(conn, scope_key, family)
    old = {} if listed is None else listed[1]
    if listed is not None and listed[0] == generation:
        return
    new = _chunks(documents(conn, scope_key, family, generation), sorted(old))
    gone = [(scope_key, family, base) for base in old if base not in new]
    changed = [
        (scope_key, family, base, generation, packed)
        for base, packed in new.items()
        if old.get(base) != packed
    ]
    conn.execute_all(
        [
            ("DELETE FROM search_doc_lists WHERE scope_key = ? AND family = ? AND base = ?", gone),
            (
                "DELETE FROM search_doc_lists WHERE scope_key = ? AND family = ? AND base = ?",
                [c[:3] for c in changed],
            ),
            (
                "INSERT INTO search_doc_lists (scope_key, family, base, generation, docs) VALUES (?, ?, ?, ?, ?)",
                changed,
            ),
            (
                "UPDATE search_doc_lists SET generation = ? WHERE scope_key = ? AND family = ?",
                [(generation, scope_key, family)],
            ),
        ]
    )


def list_all(conn: Conn) -> None:
    """Give every family that is due one a list now (the migration that adds the table)."""
    for scope_key, family in due(conn):
        relist(conn, scope_key, family)
