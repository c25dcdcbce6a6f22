"""Scope rows, their context references and per-Scope counters (inside open transactions).

Every write of a Scope's data first takes its row lock (`require_key(..., lock=True)` or a
`FOR UPDATE` read of the row), so writers to one Scope queue behind each other on either backend.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import search
from ..errors import InvalidRequest, RevisionConflict, ScopeAlreadyExists, ScopeNotFound, ScopeReferenced
from ..models import Scope
from .clock import now
from .conn import Conn, Query, inserted_key
from .op import erases, reads, writes


@writes
def create_scope(conn: Conn, scope: Scope) -> Scope:
    """Insert a Scope at version 1. `ScopeAlreadyExists`; `InvalidRequest` for a missing reference."""
    if conn.execute("SELECT 1 FROM scopes WHERE scope_id = ? FOR UPDATE", (scope.scope_id,)).fetchone():
        raise ScopeAlreadyExists()
    ref_keys = _reference_keys(conn, scope.context_references)
    stamp = now()
    cur = conn.execute(
        "INSERT INTO scopes (scope_id, title, summary, version, created_at, updated_at)"
        " VALUES (?, ?, ?, 1, ?, ?)",
        (scope.scope_id, scope.title, scope.summary, stamp, stamp),
    )
    _write_references(conn, inserted_key(cur), ref_keys)
    return _scope(conn, scope.scope_id) or scope


@reads
def get_scope(conn: Conn, scope_id: str) -> Scope | None:
    return _scope(conn, scope_id)


def _scope(conn: Conn, scope_id: str) -> Scope | None:
    # The Scope and the ids it references, in order, in one statement (on OceanBase a round trip):
    # a row per reference, or one with no referenced id.
    rows = conn.execute(
        "SELECT s.title, s.summary, s.version, t.scope_id FROM scopes s"
        " LEFT JOIN scope_references r ON r.scope_key = s.scope_key"
        " LEFT JOIN scopes t ON t.scope_key = r.referenced_key"
        " WHERE s.scope_id = ? ORDER BY r.position",
        (scope_id,),
    ).fetchall()
    if not rows:
        return None
    title, summary, version, _ = rows[0]
    refs = tuple(str(row[3]) for row in rows if row[3] is not None)
    return Scope(scope_id, title, summary, refs, version)


@reads
def list_scopes(conn: Conn, after_scope_id: str | None, limit: int) -> list[Scope]:
    """Scopes with ids greater than `after_scope_id`, ascending, at most `limit`."""
    ids = [
        row[0]
        for row in conn.execute(
            "SELECT scope_id FROM scopes WHERE scope_id > ? ORDER BY scope_id LIMIT ?",
            (after_scope_id or "", limit),
        )
    ]
    return [s for s in (_scope(conn, i) for i in ids) if s is not None]


@writes
def update_scope(
    conn: Conn,
    scope_id: str,
    expected_version: int,
    title: str | None,
    summary: str | None,
    context_references: Sequence[str] | None,
) -> Scope:
    """Apply the given fields and bump `version`. `ScopeNotFound`, `RevisionConflict`, `InvalidRequest`."""
    row = conn.execute(
        "SELECT scope_key, version FROM scopes WHERE scope_id = ? FOR UPDATE", (scope_id,)
    ).fetchone()
    if row is None:
        raise ScopeNotFound()
    scope_key, version = row
    if version != expected_version:
        raise RevisionConflict("The expected version of the Scope is stale.")
    if context_references is not None:
        ref_keys = _reference_keys(conn, context_references)
        conn.execute("DELETE FROM scope_references WHERE scope_key = ?", (scope_key,))
        _write_references(conn, scope_key, ref_keys)
    conn.execute(
        "UPDATE scopes SET title = COALESCE(?, title), summary = COALESCE(?, summary),"
        " version = version + 1, updated_at = ? WHERE scope_key = ?",
        (title, summary, now(), scope_key),
    )
    updated = _scope(conn, scope_id)
    assert updated is not None
    return updated


# Keys and counters, for the other families --------------------------------------------------------


@erases
def delete_scope(conn: Conn, scope_id: str) -> None:
    """Delete the Scope and every row of every family it holds; refused while referenced."""
    key = require_key(conn, scope_id, lock=True)
    if conn.execute("SELECT 1 FROM scope_references WHERE referenced_key = ? LIMIT 1", (key,)).fetchone():
        raise ScopeReferenced()
    search.drop_index(conn, key)
    # Children before parents: artifact heads point at revisions, everything at the Scope.
    for table in _SCOPE_TABLES:
        conn.execute(f"DELETE FROM {table} WHERE scope_key = ?", (key,))
    conn.execute("DELETE FROM scopes WHERE scope_key = ?", (key,))


_SCOPE_TABLES = (
    "memory_vectors",
    "memory_vector_removals",
    "artifact_vectors",
    "artifact_vector_removals",
    "scope_references",
    "memory_erasures",
    "memory_revisions",
    "memory_entry_versions",
    "memory_entries",
    "artifact_heads",
    "artifact_revisions",
    "candidates",
    "scope_counters",
)


def find_key(conn: Conn, scope_id: str, lock: bool = False) -> int | None:
    """The Scope's key, or None; `lock` takes its row lock, which every write of the Scope queues behind."""
    lock_clause = " FOR UPDATE" if lock else ""
    row = conn.execute(
        "SELECT scope_key FROM scopes WHERE scope_id = ?" + lock_clause, (scope_id,)
    ).fetchone()
    return None if row is None else int(row[0])


def require_key(conn: Conn, scope_id: str, lock: bool = False) -> int:
    """`find_key`, for a Scope that must exist."""
    found = find_key(conn, scope_id, lock)
    if found is None:
        raise ScopeNotFound()
    return found


def keys_by_id(conn: Conn, scope_ids: Sequence[str], column: str = "0") -> dict[str, tuple[int, int]]:
    """`scope_key` and one more column of each existing Scope, by id."""
    if not scope_ids:
        return {}
    return keys_of(conn.execute(*keys_by_id_query(scope_ids, column)).fetchall())


def keys_by_id_query(scope_ids: Sequence[str], column: str = "0") -> Query:
    """`keys_by_id`' query, for a caller to send with others (`Conn.read_all`); `keys_of` reads
    its rows."""
    sql = f"SELECT scope_id, scope_key, {column} FROM scopes WHERE scope_id IN ({_marks(scope_ids)})"
    return sql, tuple(scope_ids)


def keys_of(rows: Sequence[Any]) -> dict[str, tuple[int, int]]:
    return {str(row[0]): (int(row[1]), int(row[2])) for row in rows}


def ids_where(scope_ids: Sequence[str]) -> tuple[str, Sequence[object]]:
    """A condition on the `scopes` table selecting the Scopes `scope_ids` names, with its
    parameters: for a query joining another table to them, sent in the same round trip as the
    lookup of their keys."""
    return f"scope_id IN ({_marks(scope_ids)})", tuple(scope_ids)


def _marks(values: Sequence[object]) -> str:
    return ", ".join("?" * len(values))


def next_counter(conn: Conn, key: int, name: str) -> int:
    conn.execute(
        "INSERT INTO scope_counters (scope_key, name, value) VALUES (?, ?, 1)"
        " ON CONFLICT (scope_key, name) DO UPDATE SET value = value + 1",
        (key, name),
    )
    row = conn.execute(
        "SELECT value FROM scope_counters WHERE scope_key = ? AND name = ?", (key, name)
    ).fetchone()
    return int(row[0])


def _reference_keys(conn: Conn, references: Sequence[str]) -> list[int]:
    keys = []
    for i, ref in enumerate(references):
        found = find_key(conn, ref)
        if found is None:
            raise InvalidRequest.single(
                "reference_not_found", ("context_references", i), "The referenced Scope was not found."
            )
        keys.append(found)
    return keys


def _write_references(conn: Conn, scope_key: int, ref_keys: Sequence[int]) -> None:
    conn.executemany(
        "INSERT INTO scope_references (scope_key, position, referenced_key) VALUES (?, ?, ?)",
        [(scope_key, position, key) for position, key in enumerate(ref_keys)],
    )
