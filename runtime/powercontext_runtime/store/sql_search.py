"""The shared full-text index (`search_index.py`) in SQL: upkeep inside writes, ranked lookups."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..search_index import document_terms, ranked_query_params, ranked_query_sql, ranking

if TYPE_CHECKING:
    from .backends import Conn


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
    conn.executemany(
        "INSERT INTO search_terms (scope_key, family, term, df) VALUES (?, ?, ?, 1)"
        " ON CONFLICT (scope_key, family, term) DO UPDATE SET df = df + 1",
        [(scope_key, family, term) for term in terms],
    )
    conn.execute(
        "INSERT INTO search_stats (scope_key, family, documents, total_length) VALUES (?, ?, 1, ?)"
        " ON CONFLICT (scope_key, family) DO UPDATE SET documents = documents + 1,"
        " total_length = total_length + excluded.total_length",
        (scope_key, family, length),
    )


def unindex_document(conn: Conn, scope_key: int, family: str, doc_key: int, text: str) -> None:
    terms = document_terms(text)
    conn.executemany(
        "DELETE FROM search_postings WHERE scope_key = ? AND family = ? AND term = ? AND doc_key = ?",
        [(scope_key, family, term, doc_key) for term in terms],
    )
    conn.executemany(
        "UPDATE search_terms SET df = df - 1 WHERE scope_key = ? AND family = ? AND term = ?",
        [(scope_key, family, term) for term in terms],
    )
    conn.execute("DELETE FROM search_docs WHERE family = ? AND doc_key = ?", (family, doc_key))
    conn.execute(
        "UPDATE search_stats SET documents = documents - 1, total_length = total_length - ?"
        " WHERE scope_key = ? AND family = ?",
        (sum(terms.values()), scope_key, family),
    )


def search(conn: Conn, scope_key: int, family: str, terms: Sequence[str], limit: int) -> list[int]:
    """`doc_key`s of the best documents, best first."""
    if not terms:
        return []
    stats = conn.execute(
        "SELECT documents, total_length FROM search_stats WHERE scope_key = ? AND family = ?",
        (scope_key, family),
    ).fetchone()
    if stats is None or stats[0] == 0:
        return []
    marks = ", ".join("?" * len(terms))
    frequencies = conn.execute(
        f"SELECT term, df FROM search_terms WHERE scope_key = ? AND family = ? AND term IN ({marks})",
        (scope_key, family, *terms),
    ).fetchall()
    rank = ranking(terms, frequencies, stats[0], stats[1])
    if rank.is_empty:
        return []
    rows = conn.execute(
        ranked_query_sql("?", len(rank.weights)), ranked_query_params(scope_key, family, rank, limit)
    ).fetchall()
    return [int(row[0]) for row in rows]


def backfill(conn: Conn) -> None:
    """Index every current head document (the upgrade from the per-family FTS5 tables)."""
    from ..models import ArtifactRef
    from .sql_artifacts import decode_artifact, search_text

    for version_key, scope_key, text in conn.execute(
        "SELECT version_key, scope_key, text FROM memory_entry_versions WHERE removed_revision IS NULL"
    ).fetchall():
        index_document(conn, scope_key, "memory", version_key, text)
    for revision_key, scope_key, family, artifact_id, revision, payload in conn.execute(
        "SELECT r.revision_key, r.scope_key, r.family, r.artifact_id, r.revision, r.payload FROM artifact_heads h"
        " JOIN artifact_revisions r ON r.revision_key = h.revision_key WHERE h.family IN ('experience', 'topic-memory')"
    ).fetchall():
        artifact = decode_artifact(family, ArtifactRef(family, artifact_id, revision), payload)
        index_document(conn, scope_key, family, revision_key, search_text(artifact))
