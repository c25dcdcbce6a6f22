"""SQL for Experience, Profile, Topic Memory and Candidates (inside open transactions)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..errors import EntryNotFound, RevisionConflict, ScopeNotFound
from ..models import (
    EXPERIENCE_FAMILY,
    PROFILE_FAMILY,
    TOPIC_FAMILY,
    ArtifactRef,
    CandidateRecord,
    Experience,
    ExperienceFields,
    ProfileSnapshot,
    Proposal,
    Topic,
)
from . import sql_search

if TYPE_CHECKING:
    from .backends import Conn

SEARCHED_FAMILIES = frozenset({EXPERIENCE_FAMILY, TOPIC_FAMILY})


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def scope_key(conn: Conn, scope_id: str, lock: bool = False) -> int:
    """The Scope's key; `lock` takes its row lock, which every write of the Scope queues behind."""
    lock_clause = " FOR UPDATE" if lock else ""
    row = conn.execute(
        "SELECT scope_key FROM scopes WHERE scope_id = ?" + lock_clause, (scope_id,)
    ).fetchone()
    if row is None:
        raise ScopeNotFound()
    return int(row[0])


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


def head_revision(conn: Conn, key: int, family: str, artifact_id: str) -> int:
    """The committed head revision, or 0 when the artifact has none."""
    row = conn.execute(
        "SELECT revision FROM artifact_heads WHERE scope_key = ? AND family = ? AND artifact_id = ?",
        (key, family, artifact_id),
    ).fetchone()
    return 0 if row is None else int(row[0])


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


def search_text(value: Experience | ProfileSnapshot | Topic) -> str:
    """The text a head revision is found by."""
    if isinstance(value, Experience):
        return value.fields.body
    if isinstance(value, Topic):
        return f"{value.title}\n{value.summary}\n{value.detail}"
    return value.content


def _decode_proposal(family: str, payload: str) -> Proposal:
    data: dict[str, Any] = json.loads(payload)
    return ExperienceFields(**data) if family == EXPERIENCE_FAMILY else str(data["content"])


# Revisions ----------------------------------------------------------------------------------------


def commit_revision(conn: Conn, key: int, family: str, artifact_id: str, revision: int, payload: str) -> None:
    """Append an immutable revision, move the head, and keep the search index on heads only."""
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
    revision_key = int(cur.lastrowid or 0)
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
        sql_search.unindex_document(conn, key, family, old[0], search_text(previous))
    current = decode_artifact(family, ArtifactRef(family, artifact_id, revision), payload)
    sql_search.index_document(conn, key, family, revision_key, search_text(current))


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


def latest_profile(conn: Conn, key: int) -> ProfileSnapshot | None:
    revision = head_revision(conn, key, PROFILE_FAMILY, "profile")
    if revision == 0:
        return None
    found = read_revision(conn, key, PROFILE_FAMILY, "profile", revision)
    assert isinstance(found, ProfileSnapshot)
    return found


# Candidates ---------------------------------------------------------------------------------------

_CANDIDATE_COLUMNS = (
    "candidate_number, candidate_id, family, state, version, target_artifact_id, base_revision, payload,"
    " committed_artifact_id, committed_revision"
)


def _candidate(row: tuple[Any, ...]) -> tuple[int, CandidateRecord]:
    number, cid, family, state, version, target, base, payload, committed_id, committed_rev = row
    committed = None if committed_id is None else ArtifactRef(family, committed_id, committed_rev)
    return number, CandidateRecord(
        cid, family, state, version, target, base, _decode_proposal(family, payload), committed
    )


def insert_candidate(
    conn: Conn, key: int, family: str, target: str | None, proposal: Proposal
) -> CandidateRecord:
    if target is not None:
        base = head_revision(conn, key, family, target)
        if base == 0 and family != PROFILE_FAMILY:
            raise EntryNotFound()
    else:
        base = 0
    number = next_counter(conn, key, "candidate")
    conn.execute(
        "INSERT INTO candidates (scope_key, candidate_id, candidate_number, family, target_artifact_id,"
        " base_revision, payload, state, version, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', 1, ?)",
        (key, f"candidate-{number}", number, family, target, base, encode_payload(family, proposal), now()),
    )
    found = load_candidate(conn, key, f"candidate-{number}")
    assert found is not None
    return found


def load_candidate(conn: Conn, key: int, candidate_id: str) -> CandidateRecord | None:
    row = conn.execute(
        f"SELECT {_CANDIDATE_COLUMNS} FROM candidates WHERE scope_key = ? AND candidate_id = ?",
        (key, candidate_id),
    ).fetchone()
    return None if row is None else _candidate(row)[1]


def list_candidates(
    conn: Conn, key: int, state: str | None, after: int, limit: int
) -> list[tuple[int, CandidateRecord]]:
    rows = conn.execute(
        f"SELECT {_CANDIDATE_COLUMNS} FROM candidates WHERE scope_key = ? AND candidate_number > ?"
        " AND (? IS NULL OR state = ?) ORDER BY candidate_number LIMIT ?",
        (key, after, state, state, limit),
    ).fetchall()
    return [_candidate(row) for row in rows]


def decide_candidate(
    conn: Conn, key: int, candidate_id: str, expected_version: int, approve: bool
) -> CandidateRecord:
    candidate = load_candidate(conn, key, candidate_id)
    if candidate is None:
        raise EntryNotFound()
    if candidate.version != expected_version:
        raise RevisionConflict("The expected version of the Candidate is stale.")
    if candidate.state != "pending":
        raise RevisionConflict("The Candidate was already decided.")
    committed_id: str | None = None
    committed_revision: int | None = None
    if approve:
        committed_id = candidate.target_artifact_id
        if committed_id is None:
            committed_id = _fresh_artifact_id(conn, key, candidate.family, "experience")
        head = head_revision(conn, key, candidate.family, committed_id)
        if head != candidate.base_revision:
            raise RevisionConflict("The artifact changed after this Candidate was proposed.")
        committed_revision = head + 1
        commit_revision(
            conn,
            key,
            candidate.family,
            committed_id,
            committed_revision,
            encode_payload(candidate.family, candidate.proposal),
        )
    conn.execute(
        "UPDATE candidates SET state = ?, version = version + 1, committed_artifact_id = ?,"
        " committed_revision = ?, decided_at = ? WHERE scope_key = ? AND candidate_id = ?",
        ("approved" if approve else "rejected", committed_id, committed_revision, now(), key, candidate_id),
    )
    decided = load_candidate(conn, key, candidate_id)
    assert decided is not None
    return decided


def _fresh_artifact_id(conn: Conn, key: int, family: str, stem: str) -> str:
    """`stem-N` from the Scope's counter, skipping ids a caller chose by hand."""
    while True:
        artifact_id = f"{stem}-{next_counter(conn, key, family)}"
        if head_revision(conn, key, family, artifact_id) == 0:
            return artifact_id


def put_topic(
    conn: Conn,
    key: int,
    artifact_id: str | None,
    title: str,
    summary: str,
    detail: str,
    expected_revision: int | None,
) -> Topic:
    if artifact_id is None:
        artifact_id = _fresh_artifact_id(conn, key, TOPIC_FAMILY, "topic")
    head = head_revision(conn, key, TOPIC_FAMILY, artifact_id)
    if expected_revision is not None and expected_revision != head:
        raise RevisionConflict("The expected revision of the topic is stale.")
    topic = Topic(ArtifactRef(TOPIC_FAMILY, artifact_id, head + 1), title, summary, detail)
    commit_revision(conn, key, TOPIC_FAMILY, artifact_id, head + 1, encode_payload(TOPIC_FAMILY, topic))
    return topic
