"""The server backs off from an endpoint that keeps failing (the fake server, faults only): after a
failure the queries of the back-off period answer lexically without asking it, counted as
`backoff`; then one query probes it, and once it answers the leg is back with the same bytes. The
background embedder backs off too: writes during an outage do not make it ask again, and it
catches up afterwards with every vector stored once. The server's clock is the test's, so the
back-off ends when the test says, not after a wait."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Sequence
from typing import Any

import httpx
import numpy as np
import pytest

from devtools.embedding_server import DIMENSIONS, EmbeddingServer, Refused
from tests.api.helpers import remember

from .conftest import leg_env, stored_vectors, wait_for_vectors
from .test_embedding_faults import fallbacks

TEXTS = ("the car is parked outside", "the cat sleeps on the sofa", "we painted the fence green")
QUERY = "vehicle"  # in no text: only the vector leg finds the car
SLOW_S = 1.5  # the slow endpoint's answers come after the deadline below
TIMEOUT_MS = 1000


class Clock:
    """The server's back-off clock: stands still until the test moves it."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class Endpoint:
    """Texts about a car or a vehicle along one axis, others along another; while `down` it fails
    (a 500, or answers too late when `slow`). Records every call."""

    def __init__(self, slow: bool = False, refuse: str | None = None) -> None:
        self.slow = slow
        self.refuse = refuse  # a text the endpoint refuses with a 400, up all the while
        self.down = threading.Event()
        self.calls: list[tuple[list[str], bool]] = []  # texts, and whether the endpoint was down

    def __call__(self, texts: Sequence[str]) -> Any:
        down = self.down.is_set()
        self.calls.append((list(texts), down))
        if down and self.slow:
            time.sleep(SLOW_S)
        elif down:
            raise RuntimeError("down")
        if self.refuse in texts:
            raise Refused
        vectors = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        for row, text in enumerate(texts):
            vectors[row, 0 if re.search(r"\b(car|vehicle)\b", text) else 1] = 1.0
        return vectors

    def queries(self) -> int:
        return sum(texts == [QUERY] for texts, _ in self.calls)

    def failed(self) -> int:
        return sum(down for _, down in self.calls)


def _search(http: httpx.Client, scope_id: str, query: str = QUERY) -> list[str]:
    search = http.post("/v1/memory/search", json={"scope_id": scope_id, "query": query})
    assert search.status_code == 200
    return [hit["text"] for hit in search.json()["hits"]]


def _answer(http: httpx.Client, scope_id: str) -> tuple[list[str], str]:
    """What a search finds, and the bytes a prepare delivers."""
    found = _search(http, scope_id)
    prepared = http.post("/v1/context/prepare", json={"scope_id": scope_id, "query": QUERY, "assembly": {}})
    assert prepared.status_code == 200
    return found, prepared.json()["content"]


def _filled(http: httpx.Client) -> str:
    scope_id = "backoff:one"  # the same on every server: the Scope id is in the prepared text
    assert http.post("/v1/scopes", json={"scope_id": scope_id}).status_code == 201
    for text in TEXTS:
        remember(http, scope_id, text)
    return scope_id


@pytest.mark.parametrize(
    ("backend", "slow", "reason"),
    [("sqlite", False, "status"), ("oceanbase", False, "status"), ("sqlite", True, "timeout")],
)
def test_a_failing_endpoint_is_asked_once_a_back_off_and_the_leg_returns(
    start_server: Any, slow: bool, reason: str
) -> None:
    with httpx.Client(base_url=start_server().base_url, timeout=30) as plain:
        lexical = _answer(plain, _filled(plain))
    clock, endpoint = Clock(), Endpoint(slow)
    with EmbeddingServer(endpoint) as fake:
        server = start_server(clock=clock, **leg_env(fake.url, timeout_ms=TIMEOUT_MS))
        with httpx.Client(base_url=server.base_url, timeout=30) as http:
            scope_id = _filled(http)
            wait_for_vectors(server, len(TEXTS))  # the embedder has nothing left to ask
            hybrid = _answer(http, scope_id)
            assert lexical[0] == [] and hybrid[0][0] == TEXTS[0]  # the car, by its vector
            asked = endpoint.queries()

            endpoint.down.set()
            outage = [_answer(http, scope_id) for _ in range(4)]
            assert outage == [lexical] * 4
            assert endpoint.queries() == asked + 1  # the first search; the rest did not ask
            assert (fallbacks(http, reason), fallbacks(http, "backoff")) == (1, 7)

            clock.advance(1.0)  # the first back-off is over: one search probes, and fails
            assert [_search(http, scope_id) for _ in range(2)] == [lexical[0]] * 2
            assert endpoint.queries() == asked + 2
            clock.advance(1.0)  # the second back-off is twice as long
            assert _search(http, scope_id) == lexical[0] and endpoint.queries() == asked + 2
            clock.advance(1.0)
            assert _search(http, scope_id) == lexical[0] and endpoint.queries() == asked + 3
            assert (fallbacks(http, reason), fallbacks(http, "backoff")) == (3, 9)

            endpoint.down.clear()
            clock.advance(4.0)
            assert [_answer(http, scope_id) for _ in range(3)] == [hybrid] * 3
            assert endpoint.queries() == asked + 3 + 6  # the probe, then every search and prepare
            assert (fallbacks(http, reason), fallbacks(http, "backoff")) == (3, 9)


def test_the_embedder_backs_off_while_down_and_then_stores_every_vector_once(start_server: Any) -> None:
    clock, endpoint = Clock(), Endpoint()
    endpoint.down.set()
    with EmbeddingServer(endpoint) as fake:
        server = start_server(clock=clock, **leg_env(fake.url))
        with httpx.Client(base_url=server.base_url, timeout=30) as http:
            scope_id = "backoff:writes"
            assert http.post("/v1/scopes", json={"scope_id": scope_id}).status_code == 201
            remember(http, scope_id, "note 0")
            deadline = time.monotonic() + 30
            while not endpoint.calls and time.monotonic() < deadline:
                time.sleep(0.05)
            assert endpoint.failed() == 1 and stored_vectors(server) == []
            for n in range(1, 60):  # each write nudges the embedder, which keeps backing off
                remember(http, scope_id, f"note {n}")
            endpoint.down.clear()
            clock.advance(60.0)  # no write follows: the embedder's own timer brings it back
            rows = wait_for_vectors(server, 60)
    assert endpoint.failed() == 1
    assert [row[0] for row in rows] == [f"entry-{n}-v1" for n in range(1, 61)]


@pytest.mark.parametrize("backend", ["sqlite"])  # the endpoint answers before the database is read
def test_an_input_the_endpoint_refuses_costs_only_its_own_query_the_leg(start_server: Any) -> None:
    """A 400 says the endpoint is up and refuses that text (say, too long for its model): that
    query answers lexically, counted as `status`, and the next query asks the endpoint as usual."""
    refused = "the vehicle " + "very " * 50
    endpoint = Endpoint(refuse=refused)
    with EmbeddingServer(endpoint) as fake:
        server = start_server(**leg_env(fake.url, timeout_ms=TIMEOUT_MS))
        with httpx.Client(base_url=server.base_url, timeout=30) as http:
            scope_id = _filled(http)
            wait_for_vectors(server, len(TEXTS))
            assert _search(http, scope_id, refused) == []  # lexically: no text says "vehicle"
            asked = endpoint.queries()
            assert _search(http, scope_id)[0] == TEXTS[0]  # the car, by its vector
            assert endpoint.queries() == asked + 1
            assert (fallbacks(http, "status"), fallbacks(http, "backoff")) == (1, 0)
