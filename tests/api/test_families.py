"""Experience, Profile, Candidates, Topic Memory and exact reads through HTTP."""

from __future__ import annotations

from typing import Any

import httpx

from .helpers import experience, new_scope, profile, remember, topic


def post(http: httpx.Client, path: str, **body: Any) -> httpx.Response:
    return http.post(path, json=body)


def test_proposal_is_pending_and_not_searchable_until_approved(http: httpx.Client) -> None:
    scope_id = new_scope(http)
    proposed = post(
        http,
        "/v1/experience/propose",
        scope_id=scope_id,
        situation="s albatross",
        action="a",
        outcome="o",
        lesson="l",
    ).json()
    assert (proposed["state"], proposed["version"], proposed["committed"]) == ("pending", 1, None)
    assert post(http, "/v1/experience/search", scope_id=scope_id, query="albatross").json() == {"hits": []}
    approved = post(
        http,
        "/v1/candidates/approve",
        scope_id=scope_id,
        candidate_id=proposed["candidate_id"],
        expected_version=1,
    ).json()
    assert approved["state"] == "approved" and approved["version"] == 2
    assert approved["committed"] == {"family": "experience", "artifact_id": "experience-1", "revision": 1}
    hits = post(http, "/v1/experience/search", scope_id=scope_id, query="albatross").json()["hits"]
    assert hits[0].pop("score") > 0
    assert hits == [
        {
            "artifact": approved["committed"],
            "situation": "s albatross",
            "action": "a",
            "outcome": "o",
            "lesson": "l",
        }
    ]


def test_rejected_proposals_commit_nothing(http: httpx.Client) -> None:
    scope_id = new_scope(http)
    proposed = post(
        http,
        "/v1/experience/propose",
        scope_id=scope_id,
        situation="booby",
        action="a",
        outcome="o",
        lesson="l",
    ).json()
    rejected = post(
        http,
        "/v1/candidates/reject",
        scope_id=scope_id,
        candidate_id=proposed["candidate_id"],
        expected_version=1,
    ).json()
    assert (rejected["state"], rejected["committed"]) == ("rejected", None)
    assert post(http, "/v1/experience/search", scope_id=scope_id, query="booby").json() == {"hits": []}


def test_deciding_twice_or_with_a_stale_version_is_409_and_changes_nothing(http: httpx.Client) -> None:
    scope_id = new_scope(http)
    proposed = post(
        http,
        "/v1/experience/propose",
        scope_id=scope_id,
        situation="shag",
        action="a",
        outcome="o",
        lesson="l",
    ).json()
    cid = proposed["candidate_id"]
    assert (
        post(
            http, "/v1/candidates/approve", scope_id=scope_id, candidate_id=cid, expected_version=2
        ).status_code
        == 409
    )
    assert (
        post(
            http, "/v1/candidates/approve", scope_id=scope_id, candidate_id=cid, expected_version=1
        ).status_code
        == 200
    )
    again = post(http, "/v1/candidates/reject", scope_id=scope_id, candidate_id=cid, expected_version=2)
    assert again.status_code == 409 and again.json()["error"]["code"] == "revision_conflict"
    assert post(http, "/v1/candidates/get", scope_id=scope_id, candidate_id=cid).json()["state"] == "approved"


def test_revising_an_experience_keeps_the_old_revision_readable(http: httpx.Client) -> None:
    scope_id = new_scope(http)
    first = experience(http, scope_id, "gull v1", "a", "o", "l")["committed"]
    proposed = post(
        http,
        "/v1/experience/propose",
        scope_id=scope_id,
        situation="gull v2",
        action="a",
        outcome="o",
        lesson="l",
        artifact_id=first["artifact_id"],
    ).json()
    assert (proposed["target_artifact_id"], proposed["base_revision"]) == (first["artifact_id"], 1)
    second = post(
        http,
        "/v1/candidates/approve",
        scope_id=scope_id,
        candidate_id=proposed["candidate_id"],
        expected_version=1,
    ).json()["committed"]
    assert second == {**first, "revision": 2}
    old = post(http, "/v1/experience/get", scope_id=scope_id, artifact=first).json()
    assert old["situation"] == "gull v1"
    hits = post(http, "/v1/experience/search", scope_id=scope_id, query="gull").json()["hits"]
    assert [h["situation"] for h in hits] == ["gull v2"]


def test_two_proposals_on_one_head_cannot_both_be_approved(http: httpx.Client) -> None:
    scope_id = new_scope(http)
    profile(http, scope_id, "v1")
    a = profile(http, scope_id, "from a", approve=False)
    b = profile(http, scope_id, "from b", approve=False)
    assert (
        post(
            http,
            "/v1/candidates/approve",
            scope_id=scope_id,
            candidate_id=a["candidate_id"],
            expected_version=1,
        ).status_code
        == 200
    )
    late = post(
        http, "/v1/candidates/approve", scope_id=scope_id, candidate_id=b["candidate_id"], expected_version=1
    )
    assert late.status_code == 409
    assert (
        post(http, "/v1/candidates/get", scope_id=scope_id, candidate_id=b["candidate_id"]).json()["state"]
        == "pending"
    )


def test_proposing_a_revision_of_an_unknown_experience_is_404(http: httpx.Client) -> None:
    scope_id = new_scope(http)
    response = post(
        http,
        "/v1/experience/propose",
        scope_id=scope_id,
        situation="s",
        action="a",
        outcome="o",
        lesson="l",
        artifact_id="experience-404",
    )
    assert response.status_code == 404


def test_candidates_list_pages_and_filters_by_state(http: httpx.Client) -> None:
    scope_id = new_scope(http)
    experience(http, scope_id, "one", "a", "o", "l")
    for text in ("two", "three"):
        post(
            http,
            "/v1/experience/propose",
            scope_id=scope_id,
            situation=text,
            action="a",
            outcome="o",
            lesson="l",
        )
    pending = post(http, "/v1/candidates/list", scope_id=scope_id, state="pending").json()
    assert [c["experience"]["situation"] for c in pending["candidates"]] == ["two", "three"]
    first = post(http, "/v1/candidates/list", scope_id=scope_id, limit=2).json()
    rest = post(http, "/v1/candidates/list", scope_id=scope_id, limit=2, cursor=first["next_cursor"]).json()
    assert [c["candidate_id"] for c in first["candidates"] + rest["candidates"]] == [
        "candidate-1",
        "candidate-2",
        "candidate-3",
    ]
    assert rest["next_cursor"] is None


def test_profile_content_is_stored_with_exactly_one_final_newline(http: httpx.Client) -> None:
    scope_id = new_scope(http)
    committed = profile(http, scope_id, "# Me\n\nLikes tea.\n\n\n")["committed"]
    read = http.get(f"/v1/scopes/{scope_id}/artifacts/profile/profile/revisions/{committed['revision']}")
    assert read.json() == {"scope_id": scope_id, "artifact": committed, "profile": "# Me\n\nLikes tea.\n"}


def test_topics_are_created_revised_and_read_exactly(http: httpx.Client) -> None:
    scope_id = new_scope(http)
    first = topic(http, scope_id, "Deploys", "How we deploy", "Blue green on Fridays")
    assert first["artifact"] == {"family": "topic-memory", "artifact_id": "topic-1", "revision": 1}
    second = topic(
        http,
        scope_id,
        "Deploys",
        "How we deploy now",
        "Canary on Mondays",
        artifact_id="topic-1",
        expected_revision=1,
    )
    assert second["artifact"]["revision"] == 2
    stale = post(
        http,
        "/v1/topic-memory/put",
        scope_id=scope_id,
        artifact_id="topic-1",
        title="t",
        summary="s",
        expected_revision=1,
    )
    assert stale.status_code == 409
    old = post(http, "/v1/topic-memory/get", scope_id=scope_id, artifact=first["artifact"]).json()
    assert old == first
    hits = post(http, "/v1/topic-memory/search", scope_id=scope_id, query="canary").json()["hits"]
    assert hits[0].pop("score") > 0
    assert hits == [
        {
            "artifact": second["artifact"],
            "title": "Deploys",
            "summary": "How we deploy now",
            "snippet": "Canary on Mondays",
        }
    ]
    named = topic(http, scope_id, "Named", "chosen id", artifact_id="runbook")
    assert named["artifact"]["artifact_id"] == "runbook"


def test_generic_exact_reads_cover_every_family(http: httpx.Client) -> None:
    scope_id = new_scope(http)
    m1 = remember(http, scope_id, "first entry")
    remember(http, scope_id, "second entry")
    base = f"/v1/scopes/{scope_id}/artifacts"
    at_one = http.get(f"{base}/memory/memory/revisions/1").json()
    assert at_one == {
        "scope_id": scope_id,
        "artifact": {"family": "memory", "artifact_id": "memory", "revision": 1},
        "memory": [{k: v for k, v in m1.items() if k != "duplicate"}],  # a remember answer's flag only
    }
    assert len(http.get(f"{base}/memory/memory/revisions/2").json()["memory"]) == 2
    exp = experience(http, scope_id, "s", "a", "o", "l")["committed"]
    assert http.get(f"{base}/experience/{exp['artifact_id']}/revisions/1").json()["experience"] == {
        "situation": "s",
        "action": "a",
        "outcome": "o",
        "lesson": "l",
    }
    t = topic(http, scope_id, "T", "S", "D")["artifact"]
    assert http.get(f"{base}/topic-memory/{t['artifact_id']}/revisions/1").json()["topic"] == {
        "title": "T",
        "summary": "S",
        "detail": "D",
    }
    for missing in (
        "memory/memory/revisions/3",
        "experience/experience-9/revisions/1",
        "profile/profile/revisions/1",
    ):
        response = http.get(f"{base}/{missing}")
        assert response.status_code == 404 and response.json()["error"]["code"] == "entry_not_found"
    assert http.get(f"{base}/skills/x/revisions/1").status_code == 422
    assert http.get("/v1/scopes/project:none/artifacts/memory/memory/revisions/1").status_code == 404
