"""The embedder's queue of Experience and Topic Memory (inside open transactions): head revisions
without a vector of the model, embedded by the text the lexical index finds them by
(`artifacts.search_text`), and stored while they are still heads."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby

from ..models import ArtifactRef
from ..vectors import rows
from ..vectors.embedder import VectorSource
from ..vectors.leg import Vectors
from . import artifacts
from .conn import Conn

_FAMILIES = sorted(artifacts.SEARCHED_FAMILIES)
# An artifact revision joined to its artifact's head: only heads are searched, so only they are embedded.
_HEADS = (
    "FROM artifact_revisions r JOIN artifact_heads h ON h.scope_key = r.scope_key"
    " AND h.family = r.family AND h.artifact_id = r.artifact_id AND h.revision_key = r.revision_key"
)


def pending(conn: Conn, model: str, dims: int, after: int, limit: int) -> list[tuple[int, int, str]]:
    """(revision_key, scope_key, search text) of searched head revisions after `after` without a
    vector of `model` at `dims`, in key order."""
    found = conn.execute(
        f"SELECT r.revision_key, r.scope_key, r.family, r.artifact_id, r.revision, r.payload {_HEADS}"
        " LEFT JOIN artifact_vectors v ON v.revision_key = r.revision_key AND v.model = ? AND v.dims = ?"
        f" WHERE r.revision_key > ? AND r.family IN ({', '.join('?' * len(_FAMILIES))})"
        " AND v.revision_key IS NULL ORDER BY r.revision_key LIMIT ?",
        (model, dims, after, *_FAMILIES, limit),
    ).fetchall()
    return [
        (
            int(key),
            int(scope_key),
            artifacts.search_text(
                artifacts.decode_artifact(family, ArtifactRef(family, artifact_id, revision), payload)
            ),
        )
        for key, scope_key, family, artifact_id, revision, payload in found
    ]


def save(conn: Conn, scope_key: int, model: str, keys: Sequence[int], vectors: Vectors) -> int:
    """Store the vectors of those revision `keys` that are still heads of the Scope (a newer
    revision or the Scope's deletion may have come first), under the Scope's row lock as every
    writer takes it; the number stored."""
    rows.lock_scope(conn, scope_key)
    marks = ", ".join("?" * len(keys))
    live = {
        int(key): str(family)
        for key, family in conn.execute(
            f"SELECT r.revision_key, r.family {_HEADS} WHERE r.revision_key IN ({marks})", tuple(keys)
        )
    }
    found = sorted(
        ((live[key], key, vector) for key, vector in zip(keys, vectors, strict=True) if key in live),
        key=lambda row: (row[0], row[1]),
    )
    stored = 0
    for family, group in groupby(found, key=lambda row: row[0]):
        table = rows.artifact_vectors(family)
        stored += rows.insert(conn, table, scope_key, model, [(key, vector) for _, key, vector in group])
    return stored


SOURCE = VectorSource(pending, save)
