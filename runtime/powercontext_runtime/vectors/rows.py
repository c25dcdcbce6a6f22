"""The SQL of stored vectors (table `memory_vectors`, migration 11), inside open transactions.

One row per (entry version, model, dimensions): the unique key is what keeps two embedders (two server
processes on one database) from storing a version twice. `vector_key` only grows (AUTOINCREMENT,
AUTO_INCREMENT), so a Scope's (count, largest key) changes with every insert and delete: the
in-memory copy of its vectors is checked against it.
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


def forget(conn: Conn, version_keys: Sequence[int]) -> None:
    """Delete every model's vectors of these versions (replaced, retired or erased)."""
    if version_keys:
        marks = ", ".join("?" * len(version_keys))
        conn.execute(f"DELETE FROM memory_vectors WHERE version_key IN ({marks})", tuple(version_keys))


def stamp(conn: Conn, scope_key: int, model: str, dims: int) -> tuple[int, int]:
    """(rows, largest vector_key) of the Scope's vectors of `model` at `dims`."""
    count, last = conn.execute(
        "SELECT COUNT(*), MAX(vector_key) FROM memory_vectors WHERE scope_key = ? AND model = ? AND dims = ?",
        (scope_key, model, dims),
    ).fetchone()
    return int(count), int(last or 0)


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
