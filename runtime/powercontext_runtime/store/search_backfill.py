"""The migrations' data steps that fill the search index: index the heads it lacks, or rebuild it.

Here in the store, not in search, because it reads the store's tables and decodes artifact payloads
(`artifacts`): search sits below the store and is handed the texts.
"""

from __future__ import annotations

from ..models import ArtifactRef
from ..search import drop_index, index_document, restart_log
from .artifacts import decode_artifact, search_text
from .conn import Conn


def backfill(conn: Conn) -> None:
    """Index every current head document the index lacks (an upgrade from before the index)."""
    for version_key, scope_key, text in conn.execute(
        "SELECT v.version_key, v.scope_key, v.text FROM memory_entry_versions v"
        " LEFT JOIN search_docs d ON d.family = 'memory' AND d.doc_key = v.version_key"
        " WHERE v.removed_revision IS NULL AND d.doc_key IS NULL"
    ).fetchall():
        index_document(conn, scope_key, "memory", version_key, text)
    for revision_key, scope_key, family, artifact_id, revision, payload in conn.execute(
        "SELECT r.revision_key, r.scope_key, r.family, r.artifact_id, r.revision, r.payload FROM artifact_heads h"
        " JOIN artifact_revisions r ON r.revision_key = h.revision_key"
        " LEFT JOIN search_docs d ON d.family = h.family AND d.doc_key = h.revision_key"
        " WHERE h.family IN ('experience', 'topic-memory') AND d.doc_key IS NULL"
    ).fetchall():
        artifact = decode_artifact(family, ArtifactRef(family, artifact_id, revision), payload)
        index_document(conn, scope_key, family, revision_key, search_text(artifact))


def reindex(conn: Conn) -> None:
    """Index every head again, after the terms a text yields have changed; every mirror that saw
    the old index rebuilds rather than replays."""
    drop_index(conn)
    backfill(conn)


def upgrade_index(conn: Conn) -> None:
    """Migration 8's data step: bring the index to today's form, however old the database.

    An index written before migration 7 holds postings of the old form, and its documents no
    segment (the column's default, 0, is never a key): every head is indexed again. A later one
    keeps its postings; the log's rows changed form, so every mirror rebuilds instead of replaying
    them, and heads never indexed (a database from before the index) are indexed now.
    """
    if conn.execute("SELECT 1 FROM search_docs WHERE segment = 0 LIMIT 1").fetchone() is not None:
        reindex(conn)
        return
    restart_log(conn)
    backfill(conn)
