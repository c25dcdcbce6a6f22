"""Artifact revisions of Experience, Profile and Topic Memory (inside open transactions): payloads,
immutable revisions, the head of each artifact, and search-index upkeep of the heads."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .. import search
from ..models import (
    EXPERIENCE_FAMILY,
    MEMORY_FAMILY,
    PROFILE_FAMILY,
    TOPIC_FAMILY,
    ArtifactRef,
    ArtifactRevision,
    Experience,
    ExperienceFields,
    ProfileSnapshot,
    Proposal,
    Topic,
)
from ..vectors import rows as vectors
from . import memory, scopes
from .clock import now
from .conn import Conn, inserted_key
from .op import reads

SEARCHED_FAMILIES = frozenset({EXPERIENCE_FAMILY, TOPIC_FAMILY})


# Payloads -----------------------------------------------------------------------------------------


def encode_payload(family: str, value: Proposal | Topic) -> str:
    if isinstance(value, ExperienceFields):
        data: dict[str, str] = {
            "situation": value.situation,
            "action": value.action,
            "outcome": value.outcome,
            "lesson": value.lesson,
        }
    elif isinstance(value, Topic):
        data = {"title": value.title, "summary": value.summary, "detail": value.detail}
    else:
        data = {"content": value}
    return json.dumps(data, ensure_ascii=False)


def decode_artifact(family: str, ref: ArtifactRef, payload: str) -> Experience | ProfileSnapshot | Topic:
    data: dict[str, Any] = json.loads(payload)
    if family == EXPERIENCE_FAMILY:
        return Experience(ref, ExperienceFields(**data))
    if family == PROFILE_FAMILY:
        return ProfileSnapshot(ref, data["content"])
    return Topic(ref, data["title"], data["summary"], data["detail"])


def decode_proposal(family: str, payload: str) -> Proposal:
    data: dict[str, Any] = json.loads(payload)
    return ExperienceFields(**data) if family == EXPERIENCE_FAMILY else str(data["content"])


def search_text(value: Experience | ProfileSnapshot | Topic) -> str:
    """The text a head revision is found by."""
    if isinstance(value, Experience):
        return value.fields.body
    if isinstance(value, Topic):
        return f"{value.title}\n{value.summary}\n{value.detail}"
    return value.content


# Revisions ----------------------------------------------------------------------------------------


def head_revision(conn: Conn, key: int, family: str, artifact_id: str) -> int:
    """The committed head revision, or 0 when the artifact has none."""
    row = conn.execute(
        "SELECT revision FROM artifact_heads WHERE scope_key = ? AND family = ? AND artifact_id = ?",
        (key, family, artifact_id),
    ).fetchone()
    return 0 if row is None else int(row[0])


def fresh_artifact_id(conn: Conn, key: int, family: str, stem: str) -> str:
    """`stem-N` from the Scope's counter, skipping ids a caller chose by hand."""
    while True:
        artifact_id = f"{stem}-{scopes.next_counter(conn, key, family)}"
        if head_revision(conn, key, family, artifact_id) == 0:
            return artifact_id


def commit_revision(conn: Conn, key: int, family: str, artifact_id: str, revision: int, payload: str) -> None:
    """Append an immutable revision, move the head, and keep the search index and the stored
    vectors on heads only."""
    old = conn.execute(
        "SELECT h.revision_key, r.payload, r.revision FROM artifact_heads h"
        " JOIN artifact_revisions r ON r.revision_key = h.revision_key"
        " WHERE h.scope_key = ? AND h.family = ? AND h.artifact_id = ?",
        (key, family, artifact_id),
    ).fetchone()
    cur = conn.execute(
        "INSERT INTO artifact_revisions (scope_key, family, artifact_id, revision, payload, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (key, family, artifact_id, revision, payload, now()),
    )
    revision_key = inserted_key(cur)
    conn.execute(
        "INSERT INTO artifact_heads (scope_key, family, artifact_id, revision, revision_key) VALUES (?, ?, ?, ?, ?)"
        " ON CONFLICT (scope_key, family, artifact_id) DO UPDATE SET revision = excluded.revision,"
        " revision_key = excluded.revision_key",
        (key, family, artifact_id, revision, revision_key),
    )
    if family not in SEARCHED_FAMILIES:
        return
    if old is not None:
        previous = decode_artifact(family, ArtifactRef(family, artifact_id, old[2]), old[1])
        search.unindex_document(conn, key, family, old[0], search_text(previous))
        vectors.forget(conn, key, [int(old[0])], vectors.artifact_vectors(family))
    current = decode_artifact(family, ArtifactRef(family, artifact_id, revision), payload)
    search.index_document(conn, key, family, revision_key, search_text(current))


@reads
def get_artifact(conn: Conn, scope_id: str, ref: ArtifactRef) -> ArtifactRevision | None:
    """The exact revision of any family, or None. `ScopeNotFound` for an unknown Scope."""
    key = scopes.require_key(conn, scope_id)
    if ref.family == MEMORY_FAMILY:
        return memory.read_revision(conn, key, ref)
    return read_revision(conn, key, ref.family, ref.artifact_id, ref.revision)


def read_revision(
    conn: Conn, key: int, family: str, artifact_id: str, revision: int
) -> Experience | ProfileSnapshot | Topic | None:
    row = conn.execute(
        "SELECT payload FROM artifact_revisions WHERE scope_key = ? AND family = ? AND artifact_id = ? AND revision = ?",
        (key, family, artifact_id, revision),
    ).fetchone()
    return (
        None if row is None else decode_artifact(family, ArtifactRef(family, artifact_id, revision), row[0])
    )


def head_documents(
    conn: Conn, family: str, keys: Sequence[int]
) -> dict[int, Experience | ProfileSnapshot | Topic]:
    """The revisions behind ranked `doc_key`s that are still heads, by key."""
    if not keys:  # MySQL mode has no empty IN ()
        return {}
    rows = conn.execute(
        "SELECT r.revision_key, r.artifact_id, r.revision, r.payload FROM artifact_revisions r"
        " JOIN artifact_heads h ON h.revision_key = r.revision_key"
        f" WHERE r.revision_key IN ({', '.join('?' * len(keys))}) AND h.family = ?",
        (*keys, family),
    )
    return {
        int(key): decode_artifact(family, ArtifactRef(family, artifact_id, revision), payload)
        for key, artifact_id, revision, payload in rows
    }


# Profile ------------------------------------------------------------------------------------------


@reads
def latest_profiles(conn: Conn, scope_ids: Sequence[str]) -> list[ProfileSnapshot | None]:
    """Per Scope, its Profile's head revision; None for an unknown Scope or one without a Profile.
    One statement for all of them (on OceanBase, one round trip however many Scopes)."""
    if not scope_ids:  # MySQL mode has no empty IN ()
        return []
    rows = conn.execute(
        "SELECT s.scope_id, h.revision, r.payload FROM scopes s"
        " JOIN artifact_heads h ON h.scope_key = s.scope_key AND h.family = ? AND h.artifact_id = ?"
        " JOIN artifact_revisions r ON r.revision_key = h.revision_key"
        f" WHERE s.scope_id IN ({', '.join('?' * len(scope_ids))})",
        (PROFILE_FAMILY, "profile", *scope_ids),
    ).fetchall()
    found: dict[str, ProfileSnapshot] = {}
    for scope_id, revision, payload in rows:
        profile = decode_artifact(
            PROFILE_FAMILY, ArtifactRef(PROFILE_FAMILY, "profile", int(revision)), payload
        )
        assert isinstance(profile, ProfileSnapshot)
        found[str(scope_id)] = profile
    return [found.get(scope_id) for scope_id in scope_ids]
