"""Search hits carry the BM25 score they were ranked by, for Memory, Experience and topics alike."""

from __future__ import annotations

import itertools
import uuid

from powercontext_client import AsyncPowerContextClient, PowerContextClient

from .client_recorder import Recorder, reply


def descending(scores: list[float]) -> bool:
    return all(a >= b for a, b in itertools.pairwise(scores))


async def test_every_search_answers_positive_scores_best_first(live_server: str) -> None:
    scope_id = f"project:{uuid.uuid4().hex[:12]}"
    with PowerContextClient(live_server) as pc:
        pc.create_scope(scope_id)
        pc.remember(scope_id, "Releases are cut from main.")
        pc.remember(scope_id, "Release notes list every release; a release is tagged on main.")
        pc.remember(scope_id, "The contract lives in openapi/powercontext.yaml.")
        for lesson in ("Tag the release on main.", "Write the release notes first, then release."):
            candidate = pc.propose_experience(
                scope_id, situation="A release.", action="Released.", outcome="Shipped.", lesson=lesson
            )
            pc.approve_candidate(scope_id, candidate.candidate_id, expected_version=candidate.version)
        pc.put_topic(scope_id, title="Release process", summary="How a release is cut.", detail="From main.")
        pc.put_topic(scope_id, title="Contract", summary="The OpenAPI document.")

        memory = pc.search_memory(scope_id, "release").hits
        experience = pc.search_experience(scope_id, "release notes").hits
        topics = pc.search_topics(scope_id, "release").hits
    assert [h.text for h in memory] == [
        "Release notes list every release; a release is tagged on main.",
        "Releases are cut from main.",
    ]
    assert [h.artifact.artifact_id for h in experience] == ["experience-2", "experience-1"]
    assert [h.title for h in topics] == ["Release process"]
    for hits in (memory, experience, topics):
        scores = [h.score for h in hits]
        assert all(s > 0 for s in scores) and descending(scores), scores
        assert all(round(s, 9) == s for s in scores)  # rounded as the ranking compares them
    # The more often the words occur, the higher the score.
    assert memory[0].score > memory[1].score
    assert experience[0].score > experience[1].score

    async with AsyncPowerContextClient(live_server) as apc:
        again = (await apc.search_memory(scope_id, "release")).hits
    assert [h.score for h in again] == [h.score for h in memory]


def test_a_server_from_before_scores_still_answers_searches() -> None:
    """`score` is optional in the contract: this client reads an older server's hits without it."""
    old_hit = {
        "citation": {
            "memory_ref": {"family": "memory", "artifact_id": "memory", "revision": 1},
            "entry_id": "entry-1",
            "entry_version_id": "entry-1-v1",
        },
        "text": "Releases are cut from main.",
    }
    recorder = Recorder(reply(200, {"hits": [old_hit]}))
    with recorder.client() as pc:
        (hit,) = pc.search_memory("project:demo", "release").hits
    assert hit.text == "Releases are cut from main." and "score" not in hit.model_fields_set
