"""Memory: entries, their versions and the Scope's Memory revisions (inside open transactions).

Each write takes the Scope's row lock, then commits the Scope's next Memory revision, so a stale
`expected_revision` or citation is a `RevisionConflict`, never a lost or duplicated revision.
"""

from __future__ import annotations

from collections.abc import Sequence

from .. import search
from ..errors import EntryErased, EntryNotFound, RevisionConflict, ScopeNotFound
from ..models import (
    MEMORY_ARTIFACT_ID,
    MEMORY_FAMILY,
    ArtifactRef,
    MemoryCitation,
    MemoryEntry,
    MemoryRevision,
)
from ..vectors import rows as vectors
from . import memory_hygiene
from .clock import now
from .conn import Conn, inserted_key
from .memory_remember import remember, remember_batch
from .op import erases, reads, writes

__all__ = [
    "erase_memory_entry",
    "get_memory_entry",
    "head_versions",
    "list_memory_entries",
    "memory_entry_history",
    "read_revision",
    "remember",
    "remember_batch",
    "retire_memory_entry",
    "revise_memory_entry",
]


@writes
def revise_memory_entry(
    conn: Conn,
    scope_id: str,
    citation: MemoryCitation,
    text: str,
    keep_expiry: bool = True,
    expires_at: str | None = None,
) -> MemoryEntry:
    """New version of the cited entry, expiring as the cited one did (`keep_expiry`) or at
    `expires_at` (None: never); `RevisionConflict` unless the citation names its head version."""
    scope_key, revision, version_key, version_number, kind = _remove_head(conn, scope_id, citation)
    if keep_expiry:
        expires_at = conn.execute(
            "SELECT expires_at FROM memory_entry_versions WHERE version_key = ?", (version_key,)
        ).fetchone()[0]
    version_id = _insert_version(
        conn, scope_key, citation.entry_id, version_number + 1, text, revision, expires_at
    )
    conn.execute(
        "UPDATE memory_entries SET head_version = ? WHERE scope_key = ? AND entry_id = ?",
        (version_number + 1, scope_key, citation.entry_id),
    )
    memory_hygiene.set_text_hash(conn, scope_key, citation.entry_id, text)
    _commit_revision(conn, scope_key, revision, "revise", citation.entry_id)
    return MemoryEntry(
        MemoryCitation(revision, citation.entry_id, version_id), text, kind, "active", expires_at
    )


@writes
def retire_memory_entry(conn: Conn, scope_id: str, citation: MemoryCitation) -> MemoryEntry:
    """Retire the cited entry; `RevisionConflict` unless the citation names its head version."""
    scope_key, revision, version_key, _, kind = _remove_head(conn, scope_id, citation)
    conn.execute(
        "UPDATE memory_entries SET retired_revision = ?, text_hash = NULL WHERE scope_key = ? AND entry_id = ?",
        (revision, scope_key, citation.entry_id),
    )
    _commit_revision(conn, scope_key, revision, "retire", citation.entry_id)
    text, expires_at = conn.execute(
        "SELECT text, expires_at FROM memory_entry_versions WHERE version_key = ?", (version_key,)
    ).fetchone()
    return MemoryEntry(
        MemoryCitation(revision, citation.entry_id, citation.entry_version_id),
        text,
        kind,
        "retired",
        expires_at,
    )


@erases
def erase_memory_entry(conn: Conn, scope_id: str, entry_id: str) -> tuple[int, int]:
    """Delete every version of the entry and its index rows, keep only a tombstone of its id;
    commits the next Memory revision. Returns (that revision, how many versions were erased).
    `EntryNotFound`, or `EntryErased` when it is already gone."""
    scope_key, revision = _scope_memory(conn, scope_id, lock=True)
    _refuse_erased(conn, scope_key, entry_id)
    versions = conn.execute(
        "SELECT version_key, text, removed_revision FROM memory_entry_versions WHERE scope_key = ? AND entry_id = ?",
        (scope_key, entry_id),
    ).fetchall()
    if not versions:
        raise EntryNotFound()
    revision += 1
    for version_key, text, removed in versions:
        if removed is None:  # the live head is indexed; earlier versions left the index when replaced
            search.unindex_document(conn, scope_key, MEMORY_FAMILY, int(version_key), text)
    search.forget_documents(conn, scope_key, MEMORY_FAMILY, [int(row[0]) for row in versions])
    vectors.forget(conn, scope_key, [int(row[0]) for row in versions])
    conn.execute(
        "DELETE FROM memory_entry_versions WHERE scope_key = ? AND entry_id = ?", (scope_key, entry_id)
    )
    conn.execute("DELETE FROM memory_entries WHERE scope_key = ? AND entry_id = ?", (scope_key, entry_id))
    conn.execute(
        "INSERT INTO memory_erasures (scope_key, entry_id, erased_revision) VALUES (?, ?, ?)",
        (scope_key, entry_id, revision),
    )
    _commit_revision(conn, scope_key, revision, "erase", entry_id)
    return revision, len(versions)


def _refuse_erased(conn: Conn, scope_key: int, entry_id: str) -> None:
    if conn.execute(
        "SELECT 1 FROM memory_erasures WHERE scope_key = ? AND entry_id = ?", (scope_key, entry_id)
    ).fetchone():
        raise EntryErased()


@reads
def get_memory_entry(conn: Conn, scope_id: str, citation: MemoryCitation) -> MemoryEntry | None:
    """The exact entry version the citation names, or None when it names nothing that existed."""
    scope_key, head_revision = _scope_memory(conn, scope_id)
    row = _cited_version(conn, scope_key, head_revision, citation)
    if row is None:
        return None
    _version_key, _version_number, text, kind, _added, removed, expires_at = row
    retired_by_then = removed is not None and removed <= citation.revision
    return MemoryEntry(citation, text, kind, "retired" if retired_by_then else "active", expires_at)


@reads
def memory_entry_history(
    conn: Conn, scope_id: str, entry_id: str
) -> list[tuple[MemoryEntry, int | None]] | None:
    """Every version of an entry, oldest first: each as its citation at the revision that added it
    reads it back, with the revision that replaced or retired it. None for an entry that never
    existed; `EntryErased` for an erased one."""
    scope_key, _ = _scope_memory(conn, scope_id)
    rows = conn.execute(
        "SELECT v.entry_version_id, v.text, v.added_revision, v.removed_revision, e.kind, v.expires_at"
        " FROM memory_entry_versions v"
        " JOIN memory_entries e ON e.scope_key = v.scope_key AND e.entry_id = v.entry_id"
        " WHERE v.scope_key = ? AND v.entry_id = ? ORDER BY v.version_number",
        (scope_key, entry_id),
    ).fetchall()
    if not rows:
        _refuse_erased(conn, scope_key, entry_id)
        return None
    return [
        (MemoryEntry(MemoryCitation(added, entry_id, version_id), text, kind, "active", expires_at), removed)
        for version_id, text, added, removed, kind, expires_at in rows
    ]


@reads
def list_memory_entries(
    conn: Conn, scope_id: str, after_position: int, limit: int, live_at: str | None = None
) -> list[tuple[int, MemoryEntry]]:
    """Active head entries in creation order with their list positions; with `live_at`, only
    those not expired by then."""
    scope_key, revision = _scope_memory(conn, scope_id)
    live = "" if live_at is None else " AND (v.expires_at IS NULL OR v.expires_at > ?)"
    rows = conn.execute(
        "SELECT e.entry_number, e.entry_id, v.entry_version_id, v.text, e.kind, v.expires_at FROM memory_entries e"
        " JOIN memory_entry_versions v ON v.scope_key = e.scope_key AND v.entry_id = e.entry_id"
        " AND v.version_number = e.head_version"
        " WHERE e.scope_key = ? AND e.retired_revision IS NULL AND e.entry_number > ?" + live + ""
        " ORDER BY e.entry_number LIMIT ?",
        (scope_key, after_position, *(() if live_at is None else (live_at,)), limit),
    ).fetchall()
    return [
        (
            number,
            MemoryEntry(MemoryCitation(revision, entry_id, version_id), text, kind, "active", expires_at),
        )
        for number, entry_id, version_id, text, kind, expires_at in rows
    ]


def read_revision(conn: Conn, key: int, ref: ArtifactRef) -> MemoryRevision | None:
    """Every entry as of Memory revision `ref.revision`, or None past the head."""
    head = conn.execute("SELECT memory_revision FROM scopes WHERE scope_key = ?", (key,)).fetchone()[0]
    if ref.artifact_id != MEMORY_ARTIFACT_ID or ref.revision > head:
        return None
    rows = conn.execute(
        "SELECT v.entry_id, v.entry_version_id, v.text, e.kind, e.retired_revision, v.expires_at"
        " FROM memory_entry_versions v"
        " JOIN memory_entries e ON e.scope_key = v.scope_key AND e.entry_id = v.entry_id"
        " WHERE v.scope_key = ? AND v.added_revision <= ? AND (v.removed_revision IS NULL OR v.removed_revision > ?)"
        " ORDER BY e.entry_number",
        (key, ref.revision, ref.revision),
    ).fetchall()
    return MemoryRevision(
        ref,
        tuple(
            MemoryEntry(
                MemoryCitation(ref.revision, eid, vid),
                text,
                kind,
                "active" if retired is None else "retired",
                expires_at,
            )
            for eid, vid, text, kind, retired, expires_at in rows
        ),
    )


def head_versions(conn: Conn, keys: Sequence[int]) -> dict[int, tuple[str, str, str, str | None]]:
    """(entry_id, entry_version_id, text, expiry) of the ranked `doc_key`s that are still head
    versions, by key."""
    if not keys:  # MySQL mode has no empty IN ()
        return {}
    return {
        row[0]: row[1:]
        for row in conn.execute(
            "SELECT version_key, entry_id, entry_version_id, text, expires_at FROM memory_entry_versions"
            f" WHERE version_key IN ({', '.join('?' * len(keys))}) AND removed_revision IS NULL",
            keys,
        )
    }


# Helpers ------------------------------------------------------------------------------------------


def _scope_memory(conn: Conn, scope_id: str, lock: bool = False) -> tuple[int, int]:
    row = conn.execute(
        "SELECT scope_key, memory_revision FROM scopes WHERE scope_id = ?" + (" FOR UPDATE" if lock else ""),
        (scope_id,),
    ).fetchone()
    if row is None:
        raise ScopeNotFound()
    return int(row[0]), int(row[1])


def _citation_resolves(cited: int, head: int, added: int, removed: int | None, retired: int | None) -> bool:
    """Whether a citation at revision `cited` names this version: from the revision that added
    it, up to the head, until it was replaced. A version is cited as active while live, and as
    retired (a tombstone) from the revision that retired it on; either way the answer for one
    citation never changes."""
    if cited > head or cited < added:
        return False
    return removed is None or cited < removed or removed == retired


def _cited_version(
    conn: Conn, scope_key: int, head_revision: int, citation: MemoryCitation
) -> tuple[int, int, str, str, int, int | None, str | None] | None:
    """(version_key, version_number, text, kind, added revision, removed revision, expiry) of the
    version a citation names, or None when it names nothing that existed; `EntryErased` for an
    erased entry."""
    row = conn.execute(
        "SELECT v.version_key, v.version_number, v.text, e.kind, v.added_revision, v.removed_revision,"
        " v.expires_at, e.retired_revision FROM memory_entry_versions v"
        " JOIN memory_entries e ON e.scope_key = v.scope_key AND e.entry_id = v.entry_id"
        " WHERE v.scope_key = ? AND v.entry_id = ? AND v.entry_version_id = ?",
        (scope_key, citation.entry_id, citation.entry_version_id),
    ).fetchone()
    if row is None:
        _refuse_erased(conn, scope_key, citation.entry_id)
        return None
    *found, retired = row
    if not _citation_resolves(citation.revision, head_revision, found[4], found[5], retired):
        return None
    return (int(found[0]), int(found[1]), str(found[2]), str(found[3]), int(found[4]), found[5], found[6])


def _head_version(conn: Conn, scope_id: str, citation: MemoryCitation) -> tuple[int, int, int, int, str]:
    """(scope_key, head revision, version_key, version_number, kind) of a citation naming a head version."""
    scope_key, revision = _scope_memory(conn, scope_id, lock=True)
    row = _cited_version(conn, scope_key, revision, citation)
    if row is None:
        raise EntryNotFound()
    version_key, version_number, _text, kind, _added, removed, _expires = row
    if removed is not None:
        raise RevisionConflict("The citation does not name the entry's current version.")
    return scope_key, revision, version_key, version_number, kind


def _remove_head(conn: Conn, scope_id: str, citation: MemoryCitation) -> tuple[int, int, int, int, str]:
    """Take the cited head version out of the index as of the next Memory revision; the
    `_head_version` fields, with that revision."""
    scope_key, revision, version_key, version_number, kind = _head_version(conn, scope_id, citation)
    revision += 1
    conn.execute(
        "UPDATE memory_entry_versions SET removed_revision = ? WHERE version_key = ?",
        (revision, version_key),
    )
    _unindex_version(conn, scope_key, version_key)
    vectors.forget(conn, scope_key, [version_key])  # recall ranks head versions only, as the index holds them
    return scope_key, revision, version_key, version_number, kind


def _insert_version(
    conn: Conn,
    scope_key: int,
    entry_id: str,
    version_number: int,
    text: str,
    revision: int,
    expires_at: str | None,
) -> str:
    version_id = f"{entry_id}-v{version_number}"
    cur = conn.execute(
        "INSERT INTO memory_entry_versions (scope_key, entry_id, version_number, entry_version_id, text,"
        " added_revision, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (scope_key, entry_id, version_number, version_id, text, revision, expires_at),
    )
    search.index_document(conn, scope_key, MEMORY_FAMILY, inserted_key(cur), text)
    return version_id


def _unindex_version(conn: Conn, scope_key: int, version_key: int) -> None:
    text = conn.execute(
        "SELECT text FROM memory_entry_versions WHERE version_key = ?", (version_key,)
    ).fetchone()[0]
    search.unindex_document(conn, scope_key, MEMORY_FAMILY, version_key, text)


def _commit_revision(
    conn: Conn,
    scope_key: int,
    revision: int,
    operation: str,
    entry_id: str,
) -> None:
    conn.execute(
        "INSERT INTO memory_revisions (scope_key, revision, operation, entry_id, created_at) VALUES (?, ?, ?, ?, ?)",
        (scope_key, revision, operation, entry_id, now()),
    )
    conn.execute("UPDATE scopes SET memory_revision = ? WHERE scope_key = ?", (revision, scope_key))
