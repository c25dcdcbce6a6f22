"""The client against a real server (`live_server` from tests/conftest.py): full round trips."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import httpx
import pytest

from powercontext_api.models import (
    ArtifactRevision,
    Assembly,
    Candidate,
    Experience,
    MemoryEntry,
    PreparedContext,
    Topic,
    TopicFields,
    TopicSearchResult,
)
from powercontext_client import (
    ConflictError,
    InvalidRequestError,
    NotFoundError,
    PowerContextClient,
)


@pytest.fixture
def pc(live_server: str) -> Iterator[PowerContextClient]:
    with PowerContextClient(live_server) as client:
        yield client


def new_id(prefix: str) -> str:
    return f"{prefix}:{uuid.uuid4().hex[:12]}"


def test_create_remember_search_and_prepare_legacy_round_trip(
    pc: PowerContextClient, live_server: str
) -> None:
    team = pc.create_scope(new_id("team"), title="Platform")
    project = pc.create_scope(new_id("project"), title="Demo", context_references=[team.scope_id])
    assert project.context_references == [team.scope_id]
    assert project.version == 1

    own = pc.remember(project.scope_id, "After changing OpenAPI, run make api-generate and contract tests.")
    shared = pc.remember(team.scope_id, 'Release builds come from "main" only.', kind="decision")
    assert own.kind == "fact"  # omitted kind: the server default applies
    assert shared.kind == "decision"

    hits = pc.search_memory(project.scope_id, "OpenAPI contract").hits
    assert [h.citation for h in hits] == [own.citation]

    prepared = pc.prepare_context(project.scope_id, "OpenAPI contract release main")
    assert isinstance(prepared, PreparedContext)
    assert prepared.status == "ready"
    assert prepared.content is not None
    assert prepared.content_bytes == len(prepared.content.encode("utf-8")) <= 8000
    # The client hands back exactly what the server sent for the same request.
    raw = httpx.post(
        f"{live_server}/v1/context/prepare",
        json={"scope_id": project.scope_id, "query": "OpenAPI contract release main"},
    ).json()
    assert prepared.model_dump(mode="json", by_alias=True) == raw
    # Legacy envelope: both entries, cited exactly, the referenced one with its Scope.
    envelope = json.loads(prepared.content.split("\n")[4])
    assert [item["content"] for item in envelope["items"]] == [own.text, shared.text]
    assert envelope["items"][1]["citation"]["memory"]["scope_id"] == team.scope_id


def test_exact_read_returns_the_cited_version_after_a_revision(pc: PowerContextClient) -> None:
    scope = pc.create_scope(new_id("project"))
    first = pc.remember(scope.scope_id, "Version one of the note.")
    second = pc.revise_memory_entry(scope.scope_id, first.citation, "Version two of the note.")
    assert second.citation.entry_id == first.citation.entry_id
    assert second.citation.entry_version_id != first.citation.entry_version_id

    old = pc.get_memory_entry(scope.scope_id, first.citation.model_dump(mode="json"))
    assert isinstance(old, MemoryEntry)
    assert old.text == "Version one of the note."
    listed = pc.list_memory_entries(scope.scope_id)
    assert [e.text for e in listed.entries] == ["Version two of the note."]

    retired = pc.retire_memory_entry(scope.scope_id, second.citation)
    assert retired.state == "retired"
    assert pc.list_memory_entries(scope.scope_id).entries == []


def test_server_errors_surface_as_typed_exceptions_with_request_id(pc: PowerContextClient) -> None:
    with pytest.raises(NotFoundError) as missing:
        pc.get_scope(new_id("missing"))
    assert (missing.value.status, missing.value.code) == (404, "scope_not_found")
    assert missing.value.request_id

    scope = pc.create_scope(new_id("project"))
    pc.update_scope(scope.scope_id, expected_version=1, summary="changed")
    with pytest.raises(ConflictError) as stale:
        pc.update_scope(scope.scope_id, expected_version=1, summary="again")
    assert stale.value.code == "revision_conflict"

    with pytest.raises(ConflictError) as taken:
        pc.create_scope(scope.scope_id)
    assert taken.value.status == 409


def test_explicit_null_assembly_reaches_the_server_and_is_rejected(pc: PowerContextClient) -> None:
    scope = pc.create_scope(new_id("project"))
    with pytest.raises(InvalidRequestError) as rejected:
        pc.prepare_context(scope.scope_id, "anything", assembly=None)
    assert rejected.value.status == 422
    assert rejected.value.code == "invalid_request"
    assert rejected.value.details is not None
    assert "anything" not in json.dumps(rejected.value.details)


def test_health_capabilities_and_scope_listing(pc: PowerContextClient) -> None:
    assert pc.health_live().status == "ok"
    assert pc.health_ready().status == "ok"
    capabilities = pc.capabilities()
    assert capabilities.prepare.default_max_bytes == 8000
    assert capabilities.prepare.legacy is True

    created = {pc.create_scope(new_id("page")).scope_id for _ in range(3)}
    seen: set[str] = set()
    cursor: str | None = None
    while True:
        page = pc.list_scopes(limit=2, cursor=cursor)
        seen.update(s.scope_id for s in page.scopes)
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert created <= seen


def test_experience_profile_candidates_topics_and_exact_reads_round_trip(pc: PowerContextClient) -> None:
    scope = pc.create_scope(new_id("project")).scope_id
    proposed = pc.propose_experience(
        scope,
        situation="The HTTP API contract changed.",
        action="Run make api-generate and make contract-test.",
        outcome="Generated code matches the contract and tests pass.",
        lesson="Regenerate after a contract change, then validate.",
    )
    assert isinstance(proposed, Candidate)
    assert (proposed.state, proposed.family, proposed.committed) == ("pending", "experience", None)
    assert pc.search_experience(scope, "contract").hits == []  # pending is never recalled

    approved = pc.approve_candidate(scope, proposed.candidate_id, expected_version=proposed.version)
    assert approved.state == "approved"
    assert approved.committed is not None
    with pytest.raises(ConflictError):
        pc.approve_candidate(scope, proposed.candidate_id, expected_version=proposed.version)

    hits = pc.search_experience(scope, "contract change", limit=5).hits
    assert [hit.artifact for hit in hits] == [approved.committed]
    experience = pc.get_experience(scope, hits[0].artifact)
    assert isinstance(experience, Experience)
    assert experience.lesson == "Regenerate after a contract change, then validate."

    revision = pc.propose_experience(scope, artifact_id=approved.committed.artifact_id, **_FIELDS)
    rejected = pc.reject_candidate(scope, revision.candidate_id, expected_version=revision.version)
    assert rejected.state == "rejected"
    assert rejected.target_artifact_id == approved.committed.artifact_id

    profile = pc.propose_profile(scope, "# Demo\n\n\n")
    assert profile.profile == "# Demo\n"
    pc.approve_candidate(scope, profile.candidate_id, expected_version=profile.version)

    listed = pc.list_candidates(scope)
    assert [c.candidate_id for c in listed.candidates] == [
        proposed.candidate_id,
        revision.candidate_id,
        profile.candidate_id,
    ]
    assert [c.state for c in pc.list_candidates(scope, state="rejected").candidates] == ["rejected"]
    assert pc.get_candidate(scope, rejected.candidate_id) == rejected

    first = pc.put_topic(scope, title="Release process", summary="Releases are cut from main.")
    assert isinstance(first, Topic)
    second = pc.put_topic(
        scope,
        artifact_id=first.artifact.artifact_id,
        expected_revision=1,
        title="Release process",
        summary="Releases are cut from main after make test passes.",
        detail="Tag the commit on main.",
    )
    assert second.artifact.revision == 2
    found = pc.search_topics(scope, "releases")
    assert isinstance(found, TopicSearchResult)
    assert [hit.artifact for hit in found.hits] == [second.artifact]
    assert pc.get_topic(scope, first.artifact).summary == "Releases are cut from main."

    exact = pc.get_artifact_revision(scope, "topic-memory", first.artifact.artifact_id, 1)
    assert isinstance(exact, ArtifactRevision)
    assert isinstance(exact.topic, TopicFields)
    assert exact.topic.summary == "Releases are cut from main."
    assert pc.get_artifact_revision(scope, "profile", "profile", 1).profile == "# Demo\n"
    with pytest.raises(NotFoundError):
        pc.get_artifact_revision(scope, "experience", approved.committed.artifact_id, 2)


def test_prepare_with_an_assembly_model_gets_standard_text(pc: PowerContextClient) -> None:
    scope = pc.create_scope(new_id("project")).scope_id
    entry = pc.remember(scope, "After changing OpenAPI, regenerate the client and run contract tests.")
    text = pc.prepare_context(scope, "contract tests", assembly=Assembly())
    assert text.status == "ready"
    assert text.content is not None
    assert text.content.startswith("# PowerContext historical context\n")
    assert f'Entry: id="{entry.citation.entry_id}"' in text.content
    assert text.content_bytes == len(text.content.encode("utf-8"))
    nothing = pc.prepare_context(scope, "contract tests", assembly=Assembly(sections=[]))
    assert (nothing.status, nothing.content, nothing.content_bytes) == ("empty", None, 0)
    with pytest.raises(InvalidRequestError):
        pc.prepare_context(scope, "contract tests", assembly={"sections": [{"family": "skill", "limit": 1}]})


_FIELDS = {
    "situation": "The HTTP API contract changed.",
    "action": "Skip the contract tests.",
    "outcome": "Nothing broke this time.",
    "lesson": "Contract tests are optional.",
}
