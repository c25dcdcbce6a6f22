"""The embedding leg for Experience and Topic Memory, on both backends: the background embedder
stores one vector per head revision (of the text the lexical index finds it by), a new revision
or the Scope's deletion takes the old vectors away, search and prepare find by meaning what the
words alone miss, and a prepare asks the endpoint once for all its families."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from devtools.embedding_server import DIMENSIONS, MODEL, EmbeddingServer
from tests.api.helpers import experience, new_scope, prepare, remember, topic
from tests.conftest import LiveServer

from .conftest import (
    leg_env,
    lexical_and_hybrid,
    on_both_backends,
    stored_artifact_vectors,
    wait_for_vectors,
    wait_until,
)
from .test_embedding_leg import TEXTS as TEXTS_OF_MEMORY
from .test_embedding_leg import files_holding_bytes

EXPERIENCES = (
    (
        "the car would not start in the garage",
        "we charged the battery",
        "it started",
        "check the battery first",
    ),
    (
        "the cat scratched the sofa",
        "we bought a scratching post",
        "the sofa was spared",
        "pets want furniture",
    ),
    (
        "dinner guests arrived early",
        "we cooked pasta with tomatoes",
        "everyone ate well",
        "keep a recipe ready",
    ),
)
TOPICS = (
    ("Car upkeep", "the car needs new tyres and an oil change", "booked at the garage on Monday"),
    ("Cat care", "the cat sleeps on the sofa all afternoon", ""),
    ("Cooking", "we cooked pasta with tomatoes for dinner", ""),
)
FIELDS = ("situation", "action", "outcome", "lesson")
SECTIONS = [{"family": "experience", "limit": 2}, {"family": "topic-memory", "limit": 3}]


def experience_text(fields: Sequence[str]) -> str:
    """The Experience text the index and the embedder read, restated."""
    return "Situation: {}\nAction: {}\nOutcome: {}\nLesson: {}".format(*fields)


def topic_text(fields: Sequence[str]) -> str:
    return "\n".join(fields)


def fill(http: httpx.Client, scope_id: str) -> None:
    for fields in EXPERIENCES:
        experience(http, scope_id, *fields)
    for title, summary, detail in TOPICS:
        topic(http, scope_id, title, summary, detail)


def search(http: httpx.Client, path: str, scope_id: str, query: str) -> list[str]:
    response = http.post(path, json={"scope_id": scope_id, "query": query})
    assert response.status_code == 200, response.text
    return [hit["artifact"]["artifact_id"] for hit in response.json()["hits"]]


def test_vectors_of_experience_and_topics_are_written_and_recall_finds_meaning_only_with_the_leg(
    start_server: Any, model_server: EmbeddingServer, model_embed: Callable[[Sequence[str]], Any]
) -> None:
    def read(http: httpx.Client, scope_id: str) -> tuple[list[str], ...]:
        return (
            search(http, "/v1/experience/search", scope_id, "vehicle"),
            search(http, "/v1/topic-memory/search", scope_id, "vehicle"),
            search(http, "/v1/topic-memory/search", scope_id, "dinner vehicle"),
        )

    def embedded(server: Any) -> None:
        wait_until(server, lambda rows: len(rows) >= 6, stored_artifact_vectors)

    found, server = lexical_and_hybrid(start_server, model_server.url, fill, embedded, read)
    rows = stored_artifact_vectors(server)
    assert found["lexical"] == ([], [], ["topic-3"])
    experiences, topics, mixed = found["hybrid"]
    assert experiences[0] == "experience-1" and topics[0] == "topic-1"
    assert mixed[0] == "topic-3" and "topic-1" in mixed  # the words' hit first, the meaning's beside it
    assert sorted(row[:5] for row in rows) == sorted(
        [("experience", f"experience-{i}", 1, MODEL, DIMENSIONS) for i in (1, 2, 3)]
        + [("topic-memory", f"topic-{i}", 1, MODEL, DIMENSIONS) for i in (1, 2, 3)]
    )
    texts = {f"experience-{i + 1}": experience_text(fields) for i, fields in enumerate(EXPERIENCES)}
    texts |= {f"topic-{i + 1}": topic_text(fields) for i, fields in enumerate(TOPICS)}
    for _, artifact_id, _, _, _, blob in rows:
        expected = np.asarray(model_embed([texts[artifact_id]]), dtype="<f4")[0]
        assert np.array_equal(np.frombuffer(blob, dtype="<f4"), expected)


def test_a_new_revision_and_the_scopes_deletion_take_vectors_away(
    leg_server: Any, backend: str, model_embed: Callable[[Sequence[str]], Any]
) -> None:
    server = leg_server
    with httpx.Client(base_url=server.base_url, timeout=30) as http:
        keeper = new_scope(http)
        topic(http, keeper, *TOPICS[2])
        scope_id = new_scope(http)
        fill(http, scope_id)
        wait_until(server, lambda rows: len(rows) >= 7, stored_artifact_vectors)
        bicycle = ("Bicycle", "my bicycle stands in the garage", "")
        topic(http, scope_id, *bicycle, artifact_id="topic-1", expected_revision=1)
        experience(http, scope_id, *EXPERIENCES[0], artifact_id="experience-2")

        def revised(rows: Any) -> bool:
            return {("topic-1", 2), ("experience-2", 2)} <= {(row[1], row[2]) for row in rows}

        rows = wait_until(server, revised, stored_artifact_vectors)
        assert sorted(row[1:3] for row in rows) == [
            ("experience-1", 1),
            ("experience-2", 2),
            ("experience-3", 1),
            ("topic-1", 1),  # the keeper's
            ("topic-1", 2),
            ("topic-2", 1),
            ("topic-3", 1),
        ]
        assert search(http, "/v1/topic-memory/search", scope_id, "cycling")[0] == "topic-1"
        planted = np.asarray(model_embed([topic_text(bicycle)]), dtype="<f4")[0].tobytes()
        if backend == "sqlite":
            assert files_holding_bytes(server, planted)  # the check can see a stored vector
        assert http.delete(f"/v1/scopes/{scope_id}").status_code == 200
        assert [row[1:3] for row in stored_artifact_vectors(server)] == [("topic-1", 1)]
        # The same id starts afresh: its search finds nothing of the deleted Scope's, by either leg.
        assert http.post("/v1/scopes", json={"scope_id": scope_id}).status_code == 201
        assert search(http, "/v1/topic-memory/search", scope_id, "cycling") == []
    if backend == "sqlite":
        assert not files_holding_bytes(server, planted)


def test_prepared_bytes_of_every_family_are_the_same_on_sqlite_and_oceanbase_with_the_leg_on(
    request: pytest.FixtureRequest, model_server: EmbeddingServer, tmp_path: Path
) -> None:
    scope_id = "parity:families"
    sections = [{"family": "memory", "limit": 3}, *SECTIONS]

    def prepared(http: httpx.Client, server: LiveServer) -> list[str]:
        fill(http, scope_id)
        for i in range(12):  # more than a pool holds, so the fused cut decides
            topic(http, scope_id, f"Day {i}", f"{TOPICS[i % 3][1]} on day {i}")
            remember(http, scope_id, f"day {i}: {TOPICS[i % 3][1]}")
        wait_until(server, lambda rows: len(rows) >= 18, stored_artifact_vectors)
        wait_for_vectors(server, 12)
        return [
            prepare(http, scope_id, query, assembly={"sections": sections})["content"]
            for query in ("vehicle", "what did we eat", "the weather on day 4", "pets")
        ]

    contents = on_both_backends(request, tmp_path, leg_env(model_server.url), scope_id, prepared)
    assert contents["sqlite"] == contents["oceanbase"]
    assert all(contents["sqlite"])
    assert TOPICS[0][1] in contents["sqlite"][0]  # by meaning: no word of the query is in it


def test_keys_an_erasure_frees_are_embedded_when_handed_out_again(leg_server: Any) -> None:
    """SQLite gives a new row the largest key again once that row is deleted: the embedder, which
    had passed that key, must look again."""
    server = leg_server
    with httpx.Client(base_url=server.base_url, timeout=30) as http:
        scope_id = new_scope(http)
        remember(http, scope_id, TEXTS_OF_MEMORY[0])
        remember(http, scope_id, TEXTS_OF_MEMORY[1])
        gone = new_scope(http)
        topic(http, scope_id, *TOPICS[0])
        topic(http, gone, *TOPICS[1])
        wait_for_vectors(server, 2)
        wait_until(server, lambda rows: len(rows) >= 2, stored_artifact_vectors)
        erased = http.post("/v1/memory/entries/erase", json={"scope_id": scope_id, "entry_id": "entry-2"})
        assert erased.status_code == 200, erased.text
        assert http.delete(f"/v1/scopes/{gone}").status_code == 200
        remember(http, scope_id, TEXTS_OF_MEMORY[2])
        topic(http, scope_id, *TOPICS[2])
        memory = wait_until(server, lambda rows: "entry-3-v1" in [row[0] for row in rows])
        topics = wait_until(server, lambda rows: len(rows) >= 2, stored_artifact_vectors)
    assert sorted(row[0] for row in memory) == ["entry-1-v1", "entry-3-v1"]
    assert sorted(row[1] for row in topics) == ["topic-1", "topic-2"]
