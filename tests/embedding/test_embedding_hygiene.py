"""The embedding leg beside Memory hygiene (issue 33), on both backends: an expired entry is
recalled by neither leg, and left out of the vector ranking before it is cut (so it takes no live
entry's place); a revise that only clears the expiry makes a new version, which the embedder
embeds again; a duplicate remember stores nothing, so no vector either."""

from __future__ import annotations

from typing import Any

import httpx

from devtools.embedding_server import EmbeddingServer
from tests.api.helpers import new_scope, remember
from tests.api.test_memory_expiry import BEFORE, EXPIRES, STORED, SetClock

from .conftest import leg_env, stored_vectors, wait_for_vectors, wait_until
from .test_embedding_leg import TEXTS


def search(http: httpx.Client, scope_id: str, query: str, limit: int) -> list[str]:
    body = {"scope_id": scope_id, "query": query, "limit": limit}
    response = http.post("/v1/memory/search", json=body)
    assert response.status_code == 200, response.text
    return [hit["text"] for hit in response.json()["hits"]]


def test_an_expired_entry_is_found_by_neither_leg_until_revised_without_expiry(
    start_server: Any, backend: str, model_server: EmbeddingServer, set_clock: SetClock
) -> None:
    server = start_server(**leg_env(model_server.url))
    with httpx.Client(base_url=server.base_url, timeout=30) as http:
        scope_id = new_scope(http)
        set_clock(BEFORE)
        car = remember(http, scope_id, TEXTS[0], expires_at=EXPIRES)["citation"]
        for text in TEXTS[1:]:
            remember(http, scope_id, text)
        wait_for_vectors(server, len(TEXTS))
        assert search(http, scope_id, "vehicle", 1) == [TEXTS[0]]  # by meaning alone
        assert search(http, scope_id, "car", 1) == [TEXTS[0]]  # by its words too

        set_clock(STORED)  # the instant it expires
        for query in ("vehicle", "car"):
            one = search(http, scope_id, query, 1)
            assert len(one) == 1 and one[0] != TEXTS[0]  # a live entry takes the only place
            assert TEXTS[0] not in search(http, scope_id, query, 10)

        revised = http.post(
            "/v1/memory/entries/revise",
            json={"scope_id": scope_id, "citation": car, "text": TEXTS[0], "expires_at": None},
        )
        assert revised.status_code == 200, revised.text
        assert revised.json()["citation"]["entry_version_id"] == "entry-1-v2"
        # A new version (the old one's vector went with it): embedded again, then recalled again.
        rows = wait_until(server, lambda found: "entry-1-v2" in [row[0] for row in found])
        assert sorted(row[0] for row in rows) == ["entry-1-v2", "entry-2-v1", "entry-3-v1"]
        assert search(http, scope_id, "vehicle", 1) == [TEXTS[0]]


def test_a_duplicate_remember_adds_no_vector(
    start_server: Any, backend: str, model_server: EmbeddingServer
) -> None:
    server = start_server(**leg_env(model_server.url))
    with httpx.Client(base_url=server.base_url, timeout=30) as http:
        scope_id = new_scope(http)
        for text in TEXTS[:2]:
            remember(http, scope_id, text)
        wait_for_vectors(server, 2)
        again = remember(http, scope_id, "  " + TEXTS[1].upper())
        assert again["duplicate"] is True
        batch = http.post(
            "/v1/memory/remember/batch",
            json={"scope_id": scope_id, "entries": [{"text": TEXTS[0]}, {"text": TEXTS[2]}]},
        )
        assert batch.status_code == 200, batch.text
        # The embedder works in version order: once the batch's new entry has its vector, any
        # vector of a duplicate would be there too.
        rows = wait_for_vectors(server, 3)
    assert [row[0] for row in rows] == ["entry-1-v1", "entry-2-v1", "entry-3-v1"]
    assert len(stored_vectors(server)) == 3
