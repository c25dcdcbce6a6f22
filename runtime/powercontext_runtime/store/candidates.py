"""Candidates: proposed Experience and Profile revisions, and the decision that commits or rejects
each (inside open transactions; every write takes the Scope's row lock first)."""

from __future__ import annotations

from typing import Any

from ..errors import EntryNotFound, RevisionConflict
from ..models import PROFILE_FAMILY, ArtifactRef, CandidateRecord, Proposal
from . import artifacts, scopes
from .clock import now
from .conn import Conn
from .op import reads, writes

_COLUMNS = (
    "candidate_number, candidate_id, family, state, version, target_artifact_id, base_revision, payload,"
    " committed_artifact_id, committed_revision"
)


@writes
def propose(
    conn: Conn, scope_id: str, family: str, target: str | None, proposal: Proposal
) -> CandidateRecord:
    """A pending Candidate; `EntryNotFound` when `target` names no Experience."""
    key = scopes.require_key(conn, scope_id, lock=True)
    if target is not None:
        base = artifacts.head_revision(conn, key, family, target)
        if base == 0 and family != PROFILE_FAMILY:
            raise EntryNotFound()
    else:
        base = 0
    number = scopes.next_counter(conn, key, "candidate")
    conn.execute(
        "INSERT INTO candidates (scope_key, candidate_id, candidate_number, family, target_artifact_id,"
        " base_revision, payload, state, version, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', 1, ?)",
        (
            key,
            f"candidate-{number}",
            number,
            family,
            target,
            base,
            artifacts.encode_payload(family, proposal),
            now(),
        ),
    )
    found = _load(conn, key, f"candidate-{number}")
    assert found is not None
    return found


@writes
def decide_candidate(
    conn: Conn, scope_id: str, candidate_id: str, expected_version: int, approve: bool
) -> CandidateRecord:
    """Approve (commit the next revision) or reject. `RevisionConflict` when stale or decided."""
    key = scopes.require_key(conn, scope_id, lock=True)
    candidate = _load(conn, key, candidate_id)
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
            committed_id = artifacts.fresh_artifact_id(conn, key, candidate.family, "experience")
        head = artifacts.head_revision(conn, key, candidate.family, committed_id)
        if head != candidate.base_revision:
            raise RevisionConflict("The artifact changed after this Candidate was proposed.")
        committed_revision = head + 1
        artifacts.commit_revision(
            conn,
            key,
            candidate.family,
            committed_id,
            committed_revision,
            artifacts.encode_payload(candidate.family, candidate.proposal),
        )
    conn.execute(
        "UPDATE candidates SET state = ?, version = version + 1, committed_artifact_id = ?,"
        " committed_revision = ?, decided_at = ? WHERE scope_key = ? AND candidate_id = ?",
        ("approved" if approve else "rejected", committed_id, committed_revision, now(), key, candidate_id),
    )
    decided = _load(conn, key, candidate_id)
    assert decided is not None
    return decided


@reads
def get_candidate(conn: Conn, scope_id: str, candidate_id: str) -> CandidateRecord | None:
    return _load(conn, scopes.require_key(conn, scope_id), candidate_id)


@reads
def list_candidates(
    conn: Conn, scope_id: str, state: str | None, after_position: int, limit: int
) -> list[tuple[int, CandidateRecord]]:
    key = scopes.require_key(conn, scope_id)
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM candidates WHERE scope_key = ? AND candidate_number > ?"
        " AND (? IS NULL OR state = ?) ORDER BY candidate_number LIMIT ?",
        (key, after_position, state, state, limit),
    ).fetchall()
    return [_candidate(row) for row in rows]


def _load(conn: Conn, key: int, candidate_id: str) -> CandidateRecord | None:
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM candidates WHERE scope_key = ? AND candidate_id = ?",
        (key, candidate_id),
    ).fetchone()
    return None if row is None else _candidate(row)[1]


def _candidate(row: tuple[Any, ...]) -> tuple[int, CandidateRecord]:
    number, cid, family, state, version, target, base, payload, committed_id, committed_rev = row
    committed = None if committed_id is None else ArtifactRef(family, committed_id, committed_rev)
    return number, CandidateRecord(
        cid, family, state, version, target, base, artifacts.decode_proposal(family, payload), committed
    )
