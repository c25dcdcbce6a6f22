"""Experience and Topic Memory beside a failing endpoint, and the calls a prepare makes (the fake
server: faults, and vectors chosen so that only the vector leg can find an item): their searches
answer lexically and count the fallback, and a prepare of three families asks for its query's
vector once, fusing it into each family."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import httpx
import numpy as np
import pytest

from devtools.embedding_server import DIMENSIONS, EmbeddingServer
from tests.api.helpers import prepare, remember

from .conftest import leg_env, stored_artifact_vectors, wait_for_vectors, wait_until
from .test_embedding_artifacts import TOPICS, fill, search
from .test_embedding_faults import _slow, endpoint, fallbacks
from .test_embedding_leg import TEXTS

# The RFC caps an Experience section at 2 entries, and all sections at 8 (the server default).
SECTIONS = [
    {"family": "memory", "limit": 3},
    {"family": "experience", "limit": 2},
    {"family": "topic-memory", "limit": 3},
]


# The endpoint fails before the database is read, the same way on both backends: OceanBase runs
# the slow one, whose deadline the read waits out.
@pytest.mark.parametrize(
    ("backend", "fault", "reason"),
    [("sqlite", _slow, "timeout"), ("oceanbase", _slow, "timeout"), ("sqlite", None, "unavailable")],
)
def test_experience_and_topic_searches_answer_lexically_and_a_prepare_counts_one_fallback(
    start_server: Any, fault: Callable[[Sequence[str]], Any] | None, reason: str
) -> None:
    plain = start_server()
    with endpoint(fault) as url:
        server = start_server(**leg_env(url, timeout_ms=None))
        answers = []
        for running in (plain, server):
            with httpx.Client(base_url=running.base_url, timeout=30) as http:
                scope_id = "faults:families"  # the same on both servers: the Scope id is in the prepared text
                assert http.post("/v1/scopes", json={"scope_id": scope_id}).status_code == 201
                fill(http, scope_id)
                remember(http, scope_id, TEXTS[0])
                answers.append(
                    (
                        search(http, "/v1/experience/search", scope_id, "car"),
                        search(http, "/v1/topic-memory/search", scope_id, "car"),
                        prepare(http, scope_id, "car", assembly={"sections": SECTIONS})["content"],
                    )
                )
                if running is server:  # each search once, and the prepare once for its three families:
                    # the first asked, the others came within the back-off its failure began
                    assert (fallbacks(http, reason), fallbacks(http, "backoff")) == (1, 2)
        assert answers[0] == answers[1]
        assert answers[1][:2] == (["experience-1"], ["topic-1"])


def test_a_prepare_embeds_its_query_once_and_each_family_finds_by_meaning(start_server: Any) -> None:
    calls: list[list[str]] = []

    def chosen(texts: Sequence[str]) -> Any:
        """Texts about a car (or a vehicle) along one axis, every other text along another."""
        calls.append(list(texts))
        vectors = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        for row, text in enumerate(texts):
            vectors[row, 0 if re.search(r"\b(car|vehicle)\b", text.lower()) else 1] = 1.0
        return vectors

    with EmbeddingServer(chosen) as fake:
        server = start_server(**leg_env(fake.url, timeout_ms=None))
        with httpx.Client(base_url=server.base_url, timeout=30) as http:
            scope_id = "calls:families"
            assert http.post("/v1/scopes", json={"scope_id": scope_id}).status_code == 201
            fill(http, scope_id)
            for text in TEXTS:
                remember(http, scope_id, text)
            wait_until(server, lambda rows: len(rows) >= 6, stored_artifact_vectors)
            wait_for_vectors(server, len(TEXTS))
            calls.clear()
            text = prepare(http, scope_id, "vehicle", assembly={"sections": SECTIONS})["content"]
            assert calls == [["vehicle"]]
            legacy = prepare(http, scope_id, "vehicle")["content"]
            assert calls == [["vehicle"], ["vehicle"]]
    # No word of the query is in any item: each family's car item comes first by its vector alone.
    for content in (text, legacy):
        assert content.index(TOPICS[0][1]) < content.index(TOPICS[1][1])
        assert "the car would not start" in content  # one of the two Experience entries shown
        assert content.index(TEXTS[0]) < content.index(TEXTS[1])
