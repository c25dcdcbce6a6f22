"""A slow, down, failing or wrong endpoint (the fake server, for faults only): search and prepare
answer lexically with a 200, the fallback is counted by reason on /metrics, and the background
embedder catches up once the endpoint is back."""

from __future__ import annotations

import re
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import httpx
import numpy as np
import pytest

from devtools.embedding_server import DIMENSIONS, EmbeddingServer
from tests.api.helpers import new_scope, remember

from .conftest import leg_env, stored_vectors, wait_for_vectors

TEXTS = ("the car is parked outside", "the cat sleeps", "the car needs new tyres")


def _slow(texts: Sequence[str]) -> Any:
    time.sleep(1.0)
    return np.ones((len(texts), DIMENSIONS), dtype=np.float32)


def _failing(texts: Sequence[str]) -> Any:
    raise RuntimeError("the model fell over")


def _wrong_dims(texts: Sequence[str]) -> Any:
    return np.ones((len(texts), 8), dtype=np.float32)


def _closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/v1"


@contextmanager
def endpoint(fault: Callable[[Sequence[str]], Any] | None) -> Iterator[str]:
    """The URL of the fake server answering with `fault`, or, for None, of a port nothing listens on."""
    if fault is None:
        yield _closed_port_url()
        return
    with EmbeddingServer(fault) as fake:
        yield fake.url


def fallbacks(http: httpx.Client, reason: str) -> float:
    text = http.get("/metrics").text
    found = re.search(rf'^powercontext_embedding_fallbacks_total{{reason="{reason}"}} (\S+)$', text, re.M)
    return float(found.group(1)) if found else 0.0


# Every kind of failure on SQLite; on OceanBase the slow one, whose deadline the read waits out:
# the endpoint fails before the database is read, the same way on both.
@pytest.mark.parametrize(
    ("backend", "fault", "reason"),
    [
        ("sqlite", _slow, "timeout"),
        ("oceanbase", _slow, "timeout"),
        ("sqlite", None, "unavailable"),
        ("sqlite", _failing, "status"),
        ("sqlite", _wrong_dims, "invalid"),
    ],
)
def test_a_failing_endpoint_leaves_a_lexical_answer_and_a_count(
    start_server: Any, fault: Callable[[Sequence[str]], Any] | None, reason: str
) -> None:
    plain = start_server()
    with endpoint(fault) as url:
        server = start_server(**leg_env(url, timeout_ms=None))
        answers: list[tuple[list[str], str]] = []
        for running in (plain, server):
            with httpx.Client(base_url=running.base_url, timeout=30) as http:
                scope_id = "faults:one"  # the same on both servers: the Scope id is in the prepared text
                assert http.post("/v1/scopes", json={"scope_id": scope_id}).status_code == 201
                for text in TEXTS:
                    remember(http, scope_id, text)
                search = http.post("/v1/memory/search", json={"scope_id": scope_id, "query": "car"})
                prepared = http.post(
                    "/v1/context/prepare", json={"scope_id": scope_id, "query": "car", "assembly": {}}
                )
                assert (search.status_code, prepared.status_code) == (200, 200)
                answers.append(([hit["text"] for hit in search.json()["hits"]], prepared.json()["content"]))
                if running is server:  # the search asked; the prepare came within the back-off
                    assert (fallbacks(http, reason), fallbacks(http, "backoff")) == (1, 1)
        assert answers[0] == answers[1]
        assert answers[1][0] == [TEXTS[2], TEXTS[0]]
        if fault is not _slow:
            assert stored_vectors(server) == []


def test_the_embedder_catches_up_after_an_outage(
    start_server: Any, model_embed: Callable[[Sequence[str]], Any]
) -> None:
    broken = threading.Event()
    broken.set()
    calls: list[int] = []

    def flaky(texts: Sequence[str]) -> Any:
        calls.append(len(texts))
        if broken.is_set():
            raise RuntimeError("down for maintenance")
        return model_embed(texts)

    with EmbeddingServer(flaky) as fake:
        server = start_server(**leg_env(fake.url, timeout_ms=None))
        with httpx.Client(base_url=server.base_url, timeout=30) as http:
            scope_id = new_scope(http)
            for text in TEXTS:
                remember(http, scope_id, text)
            deadline = time.monotonic() + 30
            while not calls and time.monotonic() < deadline:
                time.sleep(0.05)
            assert calls and stored_vectors(server) == []
            broken.clear()  # no write follows: the embedder retries on its own
            rows = wait_for_vectors(server, len(TEXTS))
    assert [row[0] for row in rows] == ["entry-1-v1", "entry-2-v1", "entry-3-v1"]
