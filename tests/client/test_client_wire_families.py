"""Outbound bytes of the Experience, Profile, Candidate, Topic Memory and exact-read operations.

A transport double is right here: these tests assert what the client sends and which generated
model it returns, not server behaviour (tests/client/test_client_live.py covers round trips).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from powercontext_api.models import (
    ArtifactRef,
    ArtifactRevision,
    Candidate,
    CandidateList,
    Experience,
    ExperienceFields,
    ExperienceHit,
    ExperienceRef,
    ExperienceSearchResult,
    Topic,
    TopicRef,
    TopicSearchResult,
)
from powercontext_client import InvalidArgumentError

from .client_recorder import ENTRY, Recorder, reply

EXPERIENCE_REF = {"family": "experience", "artifact_id": "experience-1", "revision": 1}
TOPIC_REF = {"family": "topic-memory", "artifact_id": "topic-1", "revision": 2}
FIELDS = {
    "situation": "The HTTP API contract changed.",
    "action": "Run make api-generate and make contract-test.",
    "outcome": "Generated code matches the contract and tests pass.",
    "lesson": "Regenerate after a contract change, then validate.",
}
CANDIDATE = {
    "candidate_id": "candidate-1",
    "family": "experience",
    "state": "pending",
    "version": 1,
    "target_artifact_id": None,
    "base_revision": 0,
    "experience": FIELDS,
    "profile": None,
    "committed": None,
}
APPROVED = {**CANDIDATE, "state": "approved", "version": 2, "committed": EXPERIENCE_REF}
PROFILE_CANDIDATE = {
    **CANDIDATE,
    "candidate_id": "candidate-2",
    "family": "profile",
    "target_artifact_id": "profile",
    "experience": None,
    "profile": "# Demo\n",
}
EXPERIENCE = {"artifact": EXPERIENCE_REF, **FIELDS}
TOPIC = {
    "artifact": TOPIC_REF,
    "title": "Releases",
    "summary": "How releases are cut.",
    "detail": "From main.",
}


def sent(recorder: Recorder) -> Any:
    return json.loads(recorder.last.content)


# Exact reads ---------------------------------------------------------------------------------------


def test_get_artifact_revision_gets_the_exact_revision_path_without_a_body() -> None:
    answer = {"scope_id": "project:demo", "artifact": EXPERIENCE_REF, "experience": FIELDS}
    recorder = Recorder(reply(200, answer))
    with recorder.client() as pc:
        revision = pc.get_artifact_revision("project:demo", "experience", "experience-1", 1)
    assert recorder.last.method == "GET"
    assert (
        recorder.last.url.raw_path == b"/v1/scopes/project:demo/artifacts/experience/experience-1/revisions/1"
    )
    assert recorder.last.content == b""
    assert "Content-Type" not in recorder.last.headers
    assert isinstance(revision, ArtifactRevision)
    assert isinstance(revision.experience, ExperienceFields)
    assert revision.experience.lesson == FIELDS["lesson"]


def test_get_artifact_revision_percent_encodes_the_scope_and_returns_memory_entries() -> None:
    memory_ref = {"family": "memory", "artifact_id": "memory", "revision": 3}
    answer = {"scope_id": "team a?", "artifact": memory_ref, "memory": [ENTRY]}
    recorder = Recorder(reply(200, answer))
    with recorder.client() as pc:
        revision = pc.get_artifact_revision("team a?", "memory", "memory", 3)
        assert recorder.last.url.raw_path == b"/v1/scopes/team%20a%3F/artifacts/memory/memory/revisions/3"
        pc.get_artifact_revision("project:demo", "topic-memory", "topic-1", 2)
        assert (
            recorder.last.url.raw_path
            == b"/v1/scopes/project:demo/artifacts/topic-memory/topic-1/revisions/2"
        )
    assert isinstance(revision.memory, list)
    assert [entry.citation.entry_id for entry in revision.memory] == ["entry-1"]


@pytest.mark.parametrize(
    ("family", "artifact_id", "revision"),
    [("skill", "x", 1), ("memory", "Memory", 1), ("memory", "a/b", 1), ("memory", "memory", 0)],
)
def test_get_artifact_revision_rejects_bad_path_parts_before_sending(
    family: Any, artifact_id: str, revision: int
) -> None:
    recorder = Recorder(reply(200, {}))
    with recorder.client() as pc, pytest.raises(InvalidArgumentError):
        pc.get_artifact_revision("project:demo", family, artifact_id, revision)
    assert recorder.requests == []


# Experience ----------------------------------------------------------------------------------------


def test_propose_experience_sends_the_four_fields_in_wire_order() -> None:
    recorder = Recorder(reply(200, CANDIDATE))
    with recorder.client() as pc:
        candidate = pc.propose_experience(
            "project:demo",
            lesson=FIELDS["lesson"],
            outcome=FIELDS["outcome"],
            action=FIELDS["action"],
            situation=FIELDS["situation"],
        )
    assert recorder.last.method == "POST"
    assert recorder.last.url.path == "/v1/experience/propose"
    assert recorder.last.content == (
        b'{"scope_id":"project:demo","situation":"The HTTP API contract changed.",'
        b'"action":"Run make api-generate and make contract-test.",'
        b'"outcome":"Generated code matches the contract and tests pass.",'
        b'"lesson":"Regenerate after a contract change, then validate."}'
    )
    assert isinstance(candidate, Candidate)
    assert (candidate.candidate_id, candidate.state, candidate.committed) == ("candidate-1", "pending", None)


def test_propose_experience_sends_artifact_id_only_when_given() -> None:
    recorder = Recorder(reply(200, {**CANDIDATE, "target_artifact_id": "experience-1", "base_revision": 1}))
    with recorder.client() as pc:
        pc.propose_experience("project:demo", artifact_id="experience-1", **FIELDS)
    assert sent(recorder) == {"scope_id": "project:demo", **FIELDS, "artifact_id": "experience-1"}


def test_propose_experience_rejects_a_blank_field_before_sending() -> None:
    recorder = Recorder(reply(200, CANDIDATE))
    with recorder.client() as pc, pytest.raises(InvalidArgumentError):
        pc.propose_experience("project:demo", **{**FIELDS, "lesson": " \n"})
    assert recorder.requests == []


def test_search_experience_sends_limit_only_when_given() -> None:
    recorder = Recorder(reply(200, {"hits": [{**EXPERIENCE, "score": 0.5}]}))
    with recorder.client() as pc:
        result = pc.search_experience("project:demo", "contract change")
        assert recorder.last.url.path == "/v1/experience/search"
        assert recorder.last.content == b'{"scope_id":"project:demo","query":"contract change"}'
        pc.search_experience("project:demo", "contract", limit=5)
        assert recorder.last.content == b'{"scope_id":"project:demo","query":"contract","limit":5}'
    assert isinstance(result, ExperienceSearchResult)
    assert isinstance(result.hits[0], ExperienceHit)
    assert result.hits[0].artifact.artifact_id == "experience-1"
    assert result.hits[0].score == 0.5


@pytest.mark.parametrize(
    "artifact",
    [
        EXPERIENCE_REF,
        ExperienceRef.model_validate(EXPERIENCE_REF),
        ArtifactRef.model_validate(EXPERIENCE_REF),
    ],
    ids=["dict", "ExperienceRef", "ArtifactRef"],
)
def test_get_experience_accepts_a_dict_or_either_model_and_sends_the_same_bytes(artifact: Any) -> None:
    recorder = Recorder(reply(200, EXPERIENCE))
    with recorder.client() as pc:
        experience = pc.get_experience("project:demo", artifact)
    assert recorder.last.url.path == "/v1/experience/get"
    assert recorder.last.content == (
        b'{"scope_id":"project:demo","artifact":'
        b'{"family":"experience","artifact_id":"experience-1","revision":1}}'
    )
    assert isinstance(experience, Experience)


def test_get_experience_refuses_a_reference_of_another_family_before_sending() -> None:
    recorder = Recorder(reply(200, EXPERIENCE))
    with recorder.client() as pc, pytest.raises(InvalidArgumentError):
        pc.get_experience("project:demo", ArtifactRef.model_validate(TOPIC_REF))
    assert recorder.requests == []


# Profile -------------------------------------------------------------------------------------------


def test_propose_profile_sends_the_markdown_unchanged() -> None:
    recorder = Recorder(reply(200, PROFILE_CANDIDATE))
    with recorder.client() as pc:
        candidate = pc.propose_profile("project:demo", "# Demo\n\n- Python 3.11\n\n")
    assert recorder.last.url.path == "/v1/profile/propose"
    assert recorder.last.content == b'{"scope_id":"project:demo","content":"# Demo\\n\\n- Python 3.11\\n\\n"}'
    assert candidate.family == "profile"
    assert candidate.profile == "# Demo\n"


# Candidates ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path"),
    [("approve_candidate", "/v1/candidates/approve"), ("reject_candidate", "/v1/candidates/reject")],
)
def test_candidate_decisions_send_scope_candidate_and_expected_version(method: str, path: str) -> None:
    recorder = Recorder(reply(200, APPROVED))
    with recorder.client() as pc:
        decided = getattr(pc, method)("project:demo", "candidate-1", expected_version=1)
    assert recorder.last.url.path == path
    assert (
        recorder.last.content
        == b'{"scope_id":"project:demo","candidate_id":"candidate-1","expected_version":1}'
    )
    assert isinstance(decided, Candidate)


def test_approved_candidate_exposes_the_committed_reference() -> None:
    recorder = Recorder(reply(200, APPROVED))
    with recorder.client() as pc:
        approved = pc.approve_candidate("project:demo", "candidate-1", expected_version=1)
    assert approved.committed is not None
    assert approved.committed.model_dump(mode="json") == EXPERIENCE_REF


def test_candidate_decision_refuses_a_version_below_one_before_sending() -> None:
    recorder = Recorder(reply(200, APPROVED))
    with recorder.client() as pc, pytest.raises(InvalidArgumentError):
        pc.approve_candidate("project:demo", "candidate-1", expected_version=0)
    assert recorder.requests == []


def test_list_candidates_sends_state_limit_and_cursor_only_when_given() -> None:
    recorder = Recorder(reply(200, {"candidates": [CANDIDATE, PROFILE_CANDIDATE], "next_cursor": None}))
    with recorder.client() as pc:
        page = pc.list_candidates("project:demo")
        assert recorder.last.url.path == "/v1/candidates/list"
        assert recorder.last.content == b'{"scope_id":"project:demo"}'
        pc.list_candidates("project:demo", state="pending", limit=2, cursor="abc")
        assert recorder.last.content == (
            b'{"scope_id":"project:demo","state":"pending","limit":2,"cursor":"abc"}'
        )
    assert isinstance(page, CandidateList)
    assert [c.family for c in page.candidates] == ["experience", "profile"]


def test_get_candidate_sends_scope_and_candidate_id() -> None:
    recorder = Recorder(reply(200, CANDIDATE))
    with recorder.client() as pc:
        candidate = pc.get_candidate("project:demo", "candidate-1")
    assert recorder.last.url.path == "/v1/candidates/get"
    assert recorder.last.content == b'{"scope_id":"project:demo","candidate_id":"candidate-1"}'
    assert candidate.experience is not None


# Topic Memory --------------------------------------------------------------------------------------


def test_put_topic_sends_only_the_fields_given_in_wire_order() -> None:
    recorder = Recorder(reply(200, TOPIC))
    with recorder.client() as pc:
        topic = pc.put_topic("project:demo", title="Releases", summary="How releases are cut.")
        assert recorder.last.url.path == "/v1/topic-memory/put"
        assert recorder.last.content == (
            b'{"scope_id":"project:demo","title":"Releases","summary":"How releases are cut."}'
        )
        pc.put_topic(
            "project:demo",
            expected_revision=1,
            detail="",
            summary="s",
            title="t",
            artifact_id="topic-1",
        )
        assert recorder.last.content == (
            b'{"scope_id":"project:demo","artifact_id":"topic-1","title":"t","summary":"s",'
            b'"detail":"","expected_revision":1}'
        )
    assert isinstance(topic, Topic)
    assert topic.detail == "From main."


def test_search_topics_sends_limit_only_when_given() -> None:
    hit = {"artifact": TOPIC_REF, "title": "Releases", "summary": "s", "snippet": None, "score": 2.0}
    recorder = Recorder(reply(200, {"hits": [hit]}))
    with recorder.client() as pc:
        result = pc.search_topics("project:demo", "releases")
        assert recorder.last.url.path == "/v1/topic-memory/search"
        assert recorder.last.content == b'{"scope_id":"project:demo","query":"releases"}'
        pc.search_topics("project:demo", "releases", limit=1)
        assert sent(recorder)["limit"] == 1
    assert isinstance(result, TopicSearchResult)
    assert (result.hits[0].snippet, result.hits[0].score) == (None, 2.0)


@pytest.mark.parametrize(
    "artifact",
    [TOPIC_REF, TopicRef.model_validate(TOPIC_REF), ArtifactRef.model_validate(TOPIC_REF)],
    ids=["dict", "TopicRef", "ArtifactRef"],
)
def test_get_topic_accepts_a_dict_or_either_model_and_sends_the_same_bytes(artifact: Any) -> None:
    recorder = Recorder(reply(200, TOPIC))
    with recorder.client() as pc:
        topic = pc.get_topic("project:demo", artifact)
    assert recorder.last.url.path == "/v1/topic-memory/get"
    assert recorder.last.content == (
        b'{"scope_id":"project:demo","artifact":{"family":"topic-memory","artifact_id":"topic-1","revision":2}}'
    )
    assert topic.artifact.revision == 2


def test_every_new_operation_checks_its_response_against_the_generated_model() -> None:
    from powercontext_client import UnexpectedResponseError

    recorder = Recorder(reply(200, {**CANDIDATE, "extra": 1}))
    with recorder.client() as pc, pytest.raises(UnexpectedResponseError):
        pc.get_candidate("project:demo", "candidate-1")
