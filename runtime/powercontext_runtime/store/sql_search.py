"""The shared full-text index (`recall/bm25.py`) in SQL: upkeep and log inside writes, ranked reads
through the in-memory mirror (`search_mirror.py`)."""

from __future__ import annotations

from collections.abc import Sequence

from ..recall.bm25 import TermPostings, document_terms, term_weights
from .conn import Conn
from .search_mirror import FamilyMirror, SearchMirror, encode_terms

# Keep this many generations of `search_log` per (Scope, family); a mirror further behind rebuilds.
LOG_RETAIN = 4096
_PRUNE_EVERY = 256


def index_document(conn: Conn, scope_key: int, family: str, doc_key: int, text: str) -> None:
    terms = document_terms(text)
    length = sum(terms.values())
    conn.execute(
        "INSERT INTO search_docs (family, doc_key, scope_key, length) VALUES (?, ?, ?, ?)",
        (family, doc_key, scope_key, length),
    )
    conn.executemany(
        "INSERT INTO search_postings (scope_key, family, term, doc_key, tf) VALUES (?, ?, ?, ?, ?)",
        [(scope_key, family, term, doc_key, tf) for term, tf in terms.items()],
    )
    conn.execute(
        "INSERT INTO search_stats (scope_key, family, documents, total_length, generation) VALUES (?, ?, 1, ?, 1)"
        " ON CONFLICT (scope_key, family) DO UPDATE SET documents = documents + 1,"
        " total_length = total_length + excluded.total_length, generation = generation + 1",
        (scope_key, family, length),
    )
    _log(conn, scope_key, family, doc_key, length, encode_terms(dict(terms)))


def unindex_document(conn: Conn, scope_key: int, family: str, doc_key: int, text: str) -> None:
    terms = document_terms(text)
    if terms:  # one statement (one round trip on OceanBase), each term a primary-key lookup
        conn.execute(
            f"DELETE FROM search_postings WHERE scope_key = ? AND family = ? AND term IN ({_marks(list(terms))})"
            " AND doc_key = ?",
            (scope_key, family, *terms, doc_key),
        )
    conn.execute("DELETE FROM search_docs WHERE family = ? AND doc_key = ?", (family, doc_key))
    conn.execute(
        "UPDATE search_stats SET documents = documents - 1, total_length = total_length - ?,"
        " generation = generation + 1 WHERE scope_key = ? AND family = ?",
        (sum(terms.values()), scope_key, family),
    )
    _log(conn, scope_key, family, doc_key, 0, None)


def _log(conn: Conn, scope_key: int, family: str, doc_key: int, length: int, terms: str | None) -> None:
    """Record the change under the generation just taken, for mirrors to replay."""
    generation = int(
        conn.execute(
            "SELECT generation FROM search_stats WHERE scope_key = ? AND family = ?", (scope_key, family)
        ).fetchone()[0]
    )
    conn.execute(
        "INSERT INTO search_log (scope_key, family, generation, doc_key, length, terms) VALUES (?, ?, ?, ?, ?, ?)",
        (scope_key, family, generation, doc_key, length, terms),
    )
    if generation % _PRUNE_EVERY == 0:
        conn.execute(
            "DELETE FROM search_log WHERE scope_key = ? AND family = ? AND generation <= ?",
            (scope_key, family, generation - LOG_RETAIN),
        )


def _marks(values: Sequence[object]) -> str:
    return ", ".join("?" * len(values))


def ranked(
    conn: Conn, mirror: SearchMirror, scope_keys: Sequence[int], family: str, terms: Sequence[str], limit: int
) -> dict[int, list[int]]:
    """The best `doc_key`s of each Scope's family, best first.

    The caller holds `mirror.lock`. A transaction begun after taking it sees everything the mirror
    has replayed; one begun earlier (inside `Store.reading()`) may not, see `_synced`.
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
    found: dict[int, list[int]] = {}
    for scope_key in scope_keys:
        generation, documents, total_length = stats.get(scope_key, (0, 0, 0))
        if documents == 0:
            found[scope_key] = []
            continue
        family_mirror, current = _synced(conn, mirror, scope_key, family, generation)
        borrowed: dict[str, TermPostings] = {}
        missing = family_mirror.missing(terms)
        if missing:
            for term, rows in _read_terms(conn, scope_key, family, missing).items():
                postings = family_mirror.postings_of(rows)
                if current:
                    family_mirror.install(term, postings)
                else:
                    borrowed[term] = postings
        weights = term_weights(terms, family_mirror.frequencies(terms, borrowed), documents)
        found[scope_key] = family_mirror.top(weights, total_length / documents, limit, borrowed)
    mirror.evict()
    return found


def _synced(
    conn: Conn, mirror: SearchMirror, scope_key: int, family: str, generation: int
) -> tuple[FamilyMirror, bool]:
    """The family's mirror, and whether it is exactly at `generation` (replayed from the log or
    rebuilt from the tables if it was behind).

    A mirror already past `generation` (this transaction's snapshot began before another request
    replayed newer writes) is used as it is but must not take postings read in this older
    snapshot: they would lack the newer documents. Its answer can only name documents this
    snapshot cannot see, which the caller's reads then leave out.
    """
    current = mirror.get(scope_key, family)
    if current is not None and current.generation > generation:
        return current, False
    if current is not None and current.generation < generation and not current.stale:
        rows = [
            (int(g), int(k), int(length), terms)
            for g, k, length, terms in conn.execute(
                "SELECT generation, doc_key, length, terms FROM search_log"
                " WHERE scope_key = ? AND family = ? AND generation > ? AND generation <= ? ORDER BY generation",
                (scope_key, family, current.generation, generation),
            )
        ]
        if len(rows) == generation - current.generation:
            current.replay(rows)
    if current is not None and current.generation == generation and not current.stale:
        return current, True
    docs = [
        (int(k), int(length))
        for k, length in conn.execute(
            "SELECT doc_key, length FROM search_docs WHERE scope_key = ? AND family = ?", (scope_key, family)
        )
    ]
    rebuilt = FamilyMirror(generation, docs)
    mirror.put(scope_key, family, rebuilt)
    return rebuilt, True


def _read_terms(
    conn: Conn, scope_key: int, family: str, terms: list[str]
) -> dict[str, list[tuple[int, int]]]:
    rows: dict[str, list[tuple[int, int]]] = {term: [] for term in terms}
    for term, doc_key, tf in conn.execute(
        f"SELECT term, doc_key, tf FROM search_postings WHERE scope_key = ? AND family = ? AND term IN ({_marks(terms)})",
        (scope_key, family, *terms),
    ):
        rows[term].append((int(doc_key), int(tf)))
    return rows
