"""The SQL of stored vectors, inside open transactions: Memory's in `memory_vectors` (migration 11),
Experience's and Topic Memory's in `artifact_vectors` (migration 12), each table named by a
`VectorTable`.

One row per (document, model, dimensions): the unique key is what keeps two embedders (two server
processes on one database) from storing a document twice. `vector_key` only grows (AUTOINCREMENT,
AUTO_INCREMENT) and a set's vectors (a Scope's, of one family) are written under the Scope's row
lock, so its largest key says what was added; the removals table counts the set's deletions.
Together they are the stamp the in-memory copy of its vectors is checked against (index lookups: a
COUNT over 10k rows took most of a millisecond).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..search import Conn
from .leg import Vectors


@dataclass(frozen=True, slots=True)
class VectorTable:
    """Where one family's vectors are: the table, its column naming the document (a Memory version,
    an artifact revision), the table counting removals, and the family where the table holds several."""

    name: str
    document: str
    removals: str
    family: str | None = None

    @property
    def set_columns(self) -> tuple[str, ...]:
        """The columns naming one set: the Scope, and the family in a table of several."""
        return ("scope_key",) if self.family is None else ("scope_key", "family")

    def set_values(self, scope_key: int) -> tuple[int | str, ...]:
        return (scope_key,) if self.family is None else (scope_key, self.family)

    def scope_set(self, scope_key: int) -> tuple[str, tuple[int | str, ...]]:
        """The condition (and its parameters) selecting the Scope's set."""
        return " AND ".join(f"{column} = ?" for column in self.set_columns), self.set_values(scope_key)


MEMORY_VECTORS = VectorTable("memory_vectors", "version_key", "memory_vector_removals")


def artifact_vectors(family: str) -> VectorTable:
    return VectorTable("artifact_vectors", "revision_key", "artifact_vector_removals", family)


def pending(conn: Conn, model: str, dims: int, after: int, limit: int) -> list[tuple[int, int, str]]:
    """(version_key, scope_key, text) of Memory head versions after `after` without a vector of
    `model` at `dims`, in version order: the embedder's queue of Memory."""
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
    lock_scope(conn, scope_key)
    marks = ", ".join("?" * len(keys))
    live = {
        int(row[0])
        for row in conn.execute(
            f"SELECT version_key FROM memory_entry_versions WHERE version_key IN ({marks})"
            " AND removed_revision IS NULL",
            tuple(keys),
        )
    }
    found = [(key, vector) for key, vector in zip(keys, vectors, strict=True) if key in live]
    return insert(conn, MEMORY_VECTORS, scope_key, model, found)


def lock_scope(conn: Conn, scope_key: int) -> None:
    conn.execute("SELECT scope_key FROM scopes WHERE scope_key = ? FOR UPDATE", (scope_key,)).fetchall()


def insert(
    conn: Conn, table: VectorTable, scope_key: int, model: str, found: Sequence[tuple[int, Vectors]]
) -> int:
    """Store (document key, vector) rows of the Scope's set in `table`, keeping a row already
    there; the number given. The caller holds the Scope's lock and checked the documents are heads."""
    rows = [
        (key, *table.set_values(scope_key), model, int(vector.shape[0]), vector.astype("<f4").tobytes())
        for key, vector in found
    ]
    columns = (table.document, *table.set_columns, "model", "dims", "vector")
    conn.executemany(
        f"INSERT INTO {table.name} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
        f" ON CONFLICT ({table.document}, model, dims) DO UPDATE SET scope_key = excluded.scope_key",
        rows,
    )
    return len(rows)


def forget(
    conn: Conn, scope_key: int, document_keys: Sequence[int], table: VectorTable = MEMORY_VECTORS
) -> None:
    """Delete every model's vectors of these documents of the Scope (replaced, retired or erased),
    counting the deletion in the set's stamp when there was one."""
    if not document_keys:
        return
    marks = ", ".join("?" * len(document_keys))
    held = f"FROM {table.name} WHERE {table.document} IN ({marks})"
    if conn.execute(f"SELECT 1 {held} LIMIT 1", tuple(document_keys)).fetchone() is None:
        return
    conn.execute(f"DELETE {held}", tuple(document_keys))
    columns = ", ".join(table.set_columns)
    conn.execute(
        f"INSERT INTO {table.removals} ({columns}, removals) VALUES ({', '.join('?' * len(table.set_columns))}, 1)"
        f" ON CONFLICT ({columns}) DO UPDATE SET removals = removals + 1",
        table.set_values(scope_key),
    )


def stamp(conn: Conn, table: VectorTable, scope_key: int, model: str, dims: int) -> tuple[int, int, int]:
    """(deletions so far, smallest and largest vector_key) of the Scope's set of `model` at `dims`.
    The smallest key tells a Scope deleted and created again on the same key (its deletions start
    again from none) from one that only gained rows."""
    scope, params = table.scope_set(scope_key)
    where = f"FROM {table.name} WHERE {scope} AND model = ? AND dims = ?"
    # One statement, one round trip (on OceanBase each costs a few tenths of a millisecond), of
    # three scalar subqueries: MIN and MAX in one SELECT are not answered from the index's ends,
    # each alone is.
    first, last, removed = conn.execute(
        f"SELECT (SELECT MIN(vector_key) {where}), (SELECT MAX(vector_key) {where}),"
        f" (SELECT removals FROM {table.removals} WHERE {scope})",
        (*params, model, dims, *params, model, dims, *params),
    ).fetchone()
    return int(removed or 0), int(first or 0), int(last or 0)


def since(
    conn: Conn, table: VectorTable, scope_key: int, model: str, dims: int, after: int
) -> tuple[list[int], list[int], Vectors]:
    """(vector_keys, document keys, vectors) of the Scope's set of `model` after `after`, by key."""
    scope, params = table.scope_set(scope_key)
    found = conn.execute(
        f"SELECT vector_key, {table.document}, vector FROM {table.name}"
        f" WHERE {scope} AND model = ? AND dims = ? AND vector_key > ? ORDER BY vector_key",
        (*params, model, dims, after),
    ).fetchall()
    blob = b"".join(bytes(row[2]) for row in found)
    vectors = np.frombuffer(blob, dtype="<f4").reshape(len(found), dims).astype(np.float32)
    return [int(row[0]) for row in found], [int(row[1]) for row in found], vectors
