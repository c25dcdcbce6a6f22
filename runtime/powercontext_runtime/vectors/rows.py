"""The SQL of stored vectors (table `memory_vectors`, migration 11), inside open transactions.

One row per (entry version, model, dimensions): the unique key is what keeps two embedders (two server
processes on one database) from storing a version twice. `vector_key` only grows (AUTOINCREMENT,
AUTO_INCREMENT) and a Scope's vectors are written under its row lock, so its largest key says what
was added; `memory_vector_removals` counts the Scope's deletions. Together they are the stamp the
in-memory copy of its vectors is checked against (index lookups: a COUNT over 10k rows took most
of a millisecond).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..search import Conn
from .leg import Vectors


def pending(conn: Conn, model: str, dims: int, after: int, limit: int) -> list[tuple[int, int, str]]:
    """(version_key, scope_key, text) of head versions after `after` without a vector of `model` at `dims`,
    in version order: the embedder's queue."""
    return [
        (int(key), int(scope_key), str(text))
        for key, scope_key, text in conn.execute(
            "SELECT v.version_key, v.scope_key, v.text FROM memory_entry_versions v"
            " LEFT JOIN memory_vectors m ON m.version_key = v.version_key AND m.model = ? AND m.dims = ?"
            " WHERE v.version_key > ? AND v.removed_revision IS NULL AND m.version_key IS NULL"
            " ORDER BY v.version_key LIMIT ?",
            (model, dims, after, limit),
        )
    ]


def save(conn: Conn, scope_key: int, model: str, keys: Sequence[int], vectors: Vectors) -> int:
    """Store the vectors of those `keys` that are still head versions of the Scope (a revise,
    retire or erase may have come first); an existing row is kept. Takes the Scope's row lock
    first, as every writer does, so an erase never leaves a vector behind. The number stored."""
    conn.execute("SELECT scope_key FROM scopes WHERE scope_key = ? FOR UPDATE", (scope_key,)).fetchall()
    marks = ", ".join("?" * len(keys))
    live = {
        int(row[0])
        for row in conn.execute(
            f"SELECT version_key FROM memory_entry_versions WHERE version_key IN ({marks})"
            " AND removed_revision IS NULL",
            tuple(keys),
        )
    }
    rows = [
        (key, scope_key, model, int(vector.shape[0]), vector.astype("<f4").tobytes())
        for key, vector in zip(keys, vectors, strict=True)
        if key in live
    ]
    conn.executemany(
        "INSERT INTO memory_vectors (version_key, scope_key, model, dims, vector) VALUES (?, ?, ?, ?, ?)"
        " ON CONFLICT (version_key, model, dims) DO UPDATE SET scope_key = excluded.scope_key",
        rows,
    )
    return len(rows)


def forget(conn: Conn, scope_key: int, version_keys: Sequence[int]) -> None:
    """Delete every model's vectors of these versions of the Scope (replaced, retired or erased),
    counting the deletion when there was one."""
    if not version_keys:
        return
    marks = ", ".join("?" * len(version_keys))
    held = f"FROM memory_vectors WHERE version_key IN ({marks})"
    if conn.execute(f"SELECT 1 {held} LIMIT 1", tuple(version_keys)).fetchone() is None:
        return
    conn.execute(f"DELETE {held}", tuple(version_keys))
    conn.execute(
        "INSERT INTO memory_vector_removals (scope_key, removals) VALUES (?, 1)"
        " ON CONFLICT (scope_key) DO UPDATE SET removals = removals + 1",
        (scope_key,),
    )


def stamp(conn: Conn, scope_key: int, model: str, dims: int) -> tuple[int, int, int]:
    """(deletions so far, smallest and largest vector_key) of the Scope's vectors of `model` at
    `dims`. The smallest key tells a Scope deleted and created again on the same key (its
    deletions start again from none) from one that only gained rows."""
    where = "FROM memory_vectors WHERE scope_key = ? AND model = ? AND dims = ?"
    # Two statements: MIN and MAX together are not answered from the index's ends.
    first = conn.execute(f"SELECT MIN(vector_key) {where}", (scope_key, model, dims)).fetchone()[0]
    last = conn.execute(f"SELECT MAX(vector_key) {where}", (scope_key, model, dims)).fetchone()[0]
    removed = conn.execute(
        "SELECT removals FROM memory_vector_removals WHERE scope_key = ?", (scope_key,)
    ).fetchone()
    return (0 if removed is None else int(removed[0])), int(first or 0), int(last or 0)


def since(
    conn: Conn, scope_key: int, model: str, dims: int, after: int
) -> tuple[list[int], list[int], Vectors]:
    """(vector_keys, version_keys, vectors) of the Scope's rows of `model` after `after`, by key."""
    found = conn.execute(
        "SELECT vector_key, version_key, vector FROM memory_vectors"
        " WHERE scope_key = ? AND model = ? AND dims = ? AND vector_key > ? ORDER BY vector_key",
        (scope_key, model, dims, after),
    ).fetchall()
    blob = b"".join(bytes(row[2]) for row in found)
    vectors = np.frombuffer(blob, dtype="<f4").reshape(len(found), dims).astype(np.float32)
    return [int(row[0]) for row in found], [int(row[1]) for row in found], vectors
