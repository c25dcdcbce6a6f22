"""The benchmarks' and the evaluation's wait for the embedder (`bench/embedded.py`, on `vectors_pending`) waits for every
family's vectors: a Scope holding only Experience and topics is not done until theirs are stored."""

from __future__ import annotations

from typing import Any

import httpx

from bench.embedded import wait_embedded
from devtools.embedding_server import DIMENSIONS, MODEL, EmbeddingServer
from powercontext_runtime import vectors_pending
from tests.api.helpers import new_scope

from .conftest import leg_env, stored_artifact_vectors, stored_vectors
from .test_embedding_artifacts import fill
from .test_embedding_backoff import Clock, Endpoint


def test_the_wait_ends_once_experience_and_topics_have_their_vectors(start_server: Any) -> None:
    clock, endpoint = Clock(), Endpoint()
    endpoint.down.set()  # the embedder fails, then backs off until the test moves the clock
    with EmbeddingServer(endpoint) as fake:
        server = start_server(clock=clock, **leg_env(fake.url))
        url = server.application.settings.database_url
        with httpx.Client(base_url=server.base_url, timeout=30) as http:
            fill(http, new_scope(http))  # three Experience entries and three topics, no Memory entry
        assert vectors_pending(url, MODEL, DIMENSIONS)
        endpoint.down.clear()
        clock.advance(60.0)
        wait_embedded(url, MODEL, DIMENSIONS, timeout_s=60)
        assert len(stored_artifact_vectors(server)) == 6 and stored_vectors(server) == []
        assert not vectors_pending(url, MODEL, DIMENSIONS)
