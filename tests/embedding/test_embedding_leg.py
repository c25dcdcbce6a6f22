"""The embedding leg with the real model on loopback, on both backends: the background embedder
stores one vector per head version, revise/retire/erase take vectors away as they take postings,
a model change re-embeds, and recall finds by meaning what the words alone miss."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from devtools.embedding_server import DIMENSIONS, MODEL, EmbeddingServer
from powercontext_runtime import VECTOR_WEIGHT
from powercontext_runtime.vectors.leg import unit
from powercontext_runtime.vectors.screen import Screen
from powercontext_server.settings import HttpSettings
from tests.api.helpers import new_scope, remember
from tests.api.test_erasure import files_holding
from tests.conftest import LiveServer, settings_for

from .conftest import (
    leg_env,
    lexical_and_hybrid,
    on_both_backends,
    stored_vectors,
    wait_for_vectors,
    wait_until,
)

TEXTS = (
    "I parked my car in the garage last night",
    "The cat sleeps on the sofa all afternoon",
    "We cooked pasta with tomatoes for dinner",
)


def search(http: httpx.Client, scope_id: str, query: str) -> list[str]:
    response = http.post("/v1/memory/search", json={"scope_id": scope_id, "query": query})
    assert response.status_code == 200, response.text
    return [hit["text"] for hit in response.json()["hits"]]


def search_vehicle(http: httpx.Client, scope_id: str) -> list[str]:
    return search(http, scope_id, "vehicle")


def test_vectors_are_written_and_recall_finds_meaning_only_with_the_leg(
    start_server: Any, model_server: EmbeddingServer, model_embed: Callable[[Sequence[str]], Any]
) -> None:
    def write(http: httpx.Client, scope_id: str) -> None:
        for text in TEXTS:
            remember(http, scope_id, text)

    def embedded(server: Any) -> None:
        wait_for_vectors(server, len(TEXTS))

    found, server = lexical_and_hybrid(start_server, model_server.url, write, embedded, search_vehicle)
    rows = stored_vectors(server)
    assert found["lexical"] == []
    assert found["hybrid"][0] == TEXTS[0]
    assert [(version, model, dims) for version, model, dims, _ in rows] == [
        (f"entry-{i}-v1", MODEL, DIMENSIONS) for i in (1, 2, 3)
    ]
    expected = np.asarray(model_embed(list(TEXTS)), dtype="<f4")
    for (_, _, _, blob), vector in zip(rows, expected, strict=True):
        assert np.array_equal(np.frombuffer(blob, dtype="<f4"), vector)


# Twelve notes, so that the Scope's cosines have a mean and a spread to speak of.
NOTES = (
    *TEXTS,
    "My brother drives a red truck to work",
    "The bus to the airport was late again",
    "She paints sunsets with watercolours",
    "Our garden needs rain after the dry week",
    "He reads history books before bed",
    "The bike needs a new tyre and brakes",
    "We booked a train to the mountains",
    "The neighbours adopted a small dog",
    "I washed the car on Sunday morning",
)


def test_a_hybrid_hit_scores_its_bm25_share_plus_the_weighted_standard_score_of_its_cosine(
    start_server: Any, model_server: EmbeddingServer, model_embed: Callable[[Sequence[str]], Any]
) -> None:
    """The search answer's `score` with the leg on is what the contract says: BM25 over the
    Scope's best for the query, plus the weight times the cosine's standard score among the
    Scope's vectors when above their mean; hits come best first."""
    query = "my car in the garage"

    def write(http: httpx.Client, scope_id: str) -> None:
        http.post(
            "/v1/memory/remember/batch", json={"scope_id": scope_id, "entries": [{"text": t} for t in NOTES]}
        ).raise_for_status()

    def scored(http: httpx.Client, scope_id: str) -> dict[str, float]:
        response = http.post("/v1/memory/search", json={"scope_id": scope_id, "query": query, "limit": 50})
        assert response.status_code == 200, response.text
        return {hit["text"]: hit["score"] for hit in response.json()["hits"]}

    found, _ = lexical_and_hybrid(
        start_server, model_server.url, write, lambda server: wait_for_vectors(server, len(NOTES)), scored
    )
    bm25 = found["lexical"]
    assert 0 < len(bm25) < len(NOTES)  # some notes share no word with the query
    vectors = unit(np.asarray(model_embed([query, *NOTES]), dtype=np.float32))
    cosines = vectors[1:].astype(np.float64) @ vectors[0].astype(np.float64)
    # The statistics are of the vectors' 8-bit estimates (vectors/screen.py), within 0.02 of exact.
    estimates = Screen.of(vectors[1:]).estimates(vectors[0]).cosines
    assert np.abs(estimates - cosines).max() <= 0.02
    mean, spread = estimates.mean(), estimates.std()
    best = max(bm25.values())
    expected = {
        text: bm25.get(text, 0.0) / best + VECTOR_WEIGHT * max(0.0, (cosine - mean) / spread)
        for text, cosine in zip(NOTES, cosines, strict=True)
    }
    hybrid = found["hybrid"]
    assert set(hybrid) == set(NOTES)  # every note is among the 64 nearest
    assert hybrid == pytest.approx(expected, rel=1e-5)
    # Best first; equal scores (those of notes neither leg favours: 0) in lexical order, then newest first.
    lexical_rank = {text: rank for rank, text in enumerate(bm25)}
    order = sorted(
        NOTES,
        key=lambda text: (-round(expected[text], 6), lexical_rank.get(text, len(bm25)), -NOTES.index(text)),
    )
    assert list(hybrid) == order


def test_revise_retire_and_erase_take_vectors_away_without_a_trace(
    start_server: Any,
    backend: str,
    model_server: EmbeddingServer,
    model_embed: Callable[[Sequence[str]], Any],
) -> None:
    server = start_server(**leg_env(model_server.url))
    with httpx.Client(base_url=server.base_url, timeout=30) as http:
        scope_id = new_scope(http)
        first = remember(http, scope_id, TEXTS[0])["citation"]
        second = remember(http, scope_id, TEXTS[1])["citation"]
        remember(http, scope_id, TEXTS[2])
        wait_for_vectors(server, 3)
        revised = http.post(
            "/v1/memory/entries/revise",
            json={"scope_id": scope_id, "citation": first, "text": "My bicycle stands in the garage"},
        )
        assert revised.status_code == 200, revised.text
        retired = http.post("/v1/memory/entries/retire", json={"scope_id": scope_id, "citation": second})
        assert retired.status_code == 200, retired.text
        wait_until(server, lambda rows: "entry-1-v2" in [row[0] for row in rows])
        assert sorted(row[0] for row in stored_vectors(server)) == ["entry-1-v2", "entry-3-v1"]
        planted = np.asarray(model_embed(["My bicycle stands in the garage"]), dtype="<f4")[0].tobytes()
        if backend == "sqlite":
            assert files_holding_bytes(server, planted)  # the check can see a stored vector
        erased = http.post("/v1/memory/entries/erase", json={"scope_id": scope_id, "entry_id": "entry-1"})
        assert erased.status_code == 200, erased.text
        assert [row[0] for row in stored_vectors(server)] == ["entry-3-v1"]
        assert search(http, scope_id, "bicycle") == [TEXTS[2]]  # only what is left, by meaning
    if backend == "sqlite":
        assert not files_holding_bytes(server, planted)
        assert files_holding(server, "pasta")


def files_holding_bytes(server: Any, blob: bytes) -> list[str]:
    directory = Path(server.application.settings.database_url.removeprefix("sqlite:///")).parent
    return [path.name for path in directory.iterdir() if path.is_file() and blob in path.read_bytes()]


def test_a_model_change_re_embeds_and_two_servers_store_each_vector_once(
    start_server: Any, backend: str, model_server: EmbeddingServer, tmp_path: Path
) -> None:
    first = start_server(**leg_env(model_server.url, model="model-one"))
    url = first.application.settings.database_url
    with httpx.Client(base_url=first.base_url, timeout=30) as http:
        scope_id = new_scope(http)
        http.post(
            "/v1/memory/remember/batch",
            json={
                "scope_id": scope_id,
                "entries": [{"text": f"note {i} about {TEXTS[i % 3]}"} for i in range(150)],
            },
        ).raise_for_status()
    wait_for_vectors(first, 150, model="model-one")
    first.stop()
    env = leg_env(model_server.url, model="model-two")
    servers = [
        LiveServer(
            settings_for(tmp_path / f"again-{i}", POWERCONTEXT_SERVER_DATABASE_URL=url),
            http=HttpSettings.from_env(env),
        )
        for i in range(2)
    ]
    for server in servers:
        server.start()
    try:
        rows = wait_for_vectors(servers[0], 150, model="model-two")
        with httpx.Client(base_url=servers[1].base_url, timeout=30) as http:
            assert search(http, scope_id, "vehicle")[0].endswith(TEXTS[0])
    finally:
        for server in servers:
            server.stop()
    by_model = {
        model: sorted(version for version, m, _, _ in rows if m == model)
        for model in ("model-one", "model-two")
    }
    assert by_model["model-one"] == by_model["model-two"]
    assert len(by_model["model-two"]) == len(set(by_model["model-two"])) == 150


def test_prepared_bytes_are_the_same_on_sqlite_and_oceanbase_with_the_leg_on(
    request: pytest.FixtureRequest, model_server: EmbeddingServer, tmp_path: Path
) -> None:
    scope_id = "parity:scope"
    topics = ["work", "the weather", "travel"]

    def prepared(http: httpx.Client, server: LiveServer) -> list[str]:
        entries = [{"text": f"day {i}: {TEXTS[i % 3]} and talked about {topics[i % 3]}"} for i in range(60)]
        http.post(
            "/v1/memory/remember/batch", json={"scope_id": scope_id, "entries": entries}
        ).raise_for_status()
        wait_for_vectors(server, 60)
        return [
            http.post(
                "/v1/context/prepare",
                json={
                    "scope_id": scope_id,
                    "query": query,
                    "assembly": {"sections": [{"family": "memory", "limit": 8}]},
                },
            ).json()["content"]
            for query in ("vehicle in the garage", "what did we eat", "the weather on day 4", "pets")
        ]

    contents = on_both_backends(request, tmp_path, leg_env(model_server.url), scope_id, prepared)
    assert contents["sqlite"] == contents["oceanbase"]
    assert all(contents["sqlite"])
