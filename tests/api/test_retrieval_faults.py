"""A2 and the error mapping: retrieval failures are injected into a real store behind a real server.

The store double only adds faults (the one place a double is right); everything else is SQLite.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from powercontext_runtime import RetrievalUnavailable, ScopedContextApplication, Settings, backend_for
from powercontext_runtime.store.sql_store import SqlStore

from ..conftest import LiveServer, database_env
from .helpers import experience, new_scope, profile, remember, topic

READS = {
    "memory": "search_memory",
    "experience": "search_experience",
    "topic-memory": "search_topics",
    "profile": "latest_profiles",
}


class FaultyStore:
    """A SQLite store whose candidate reads for the named families fail like a dead service."""

    def __init__(self, inner: SqlStore, failing: set[str]) -> None:
        self._inner = inner
        self._failing = {READS[f] for f in failing}

    def __getattr__(self, name: str) -> Any:
        if name in self._failing:

            def fail(*args: Any, **kwargs: Any) -> Any:
                raise RetrievalUnavailable()

            return fail
        return getattr(self._inner, name)


@pytest.fixture
def faulty_server(request: pytest.FixtureRequest, backend: str, tmp_path: Path) -> Iterator[Any]:
    servers: list[LiveServer] = []

    def start(*failing: str) -> httpx.Client:
        url = database_env(request, backend).get(
            "POWERCONTEXT_SERVER_DATABASE_URL", f"sqlite:///{tmp_path / f'faults-{len(servers)}.sqlite3'}"
        )
        settings = Settings(database_url=url)
        store = FaultyStore(SqlStore(backend_for(url)), set(failing))
        server = LiveServer(settings, ScopedContextApplication(store, settings))  # type: ignore[arg-type]
        server.start()
        servers.append(server)
        return httpx.Client(base_url=server.base_url)

    yield start
    for server in servers:
        server.stop()


def seed(http: httpx.Client) -> str:
    scope_id = new_scope(http)
    remember(http, scope_id, "cormorant memory")
    experience(http, scope_id, "cormorant", "a", "o", "l")
    topic(http, scope_id, "cormorant topic", "s")
    profile(http, scope_id, "cormorant profile")
    return scope_id


def ask(http: httpx.Client, scope_id: str, sections: list[dict[str, Any]] | None) -> httpx.Response:
    body: dict[str, Any] = {"scope_id": scope_id, "query": "cormorant"}
    if sections is not None:
        body["assembly"] = {"sections": sections}
    return http.post("/v1/context/prepare", json=body)


def test_failing_unselected_families_cannot_affect_the_request(faulty_server: Any) -> None:
    """A2: Experience, Topic Memory and Profile are down; a Memory-only request does not notice."""
    http = faulty_server("experience", "topic-memory", "profile")
    scope_id = seed(http)
    response = ask(http, scope_id, [{"family": "memory", "limit": 8}])
    assert response.status_code == 200
    assert response.json()["status"] == "ready" and ">     cormorant memory" in response.json()["content"]


@pytest.mark.parametrize("family", sorted(READS))
def test_a_failing_selected_family_is_503_never_an_empty_success(faulty_server: Any, family: str) -> None:
    """R: a configured retrieval failure keeps its error mapping."""
    http = faulty_server(family)
    scope_id = seed(http)
    response = ask(http, scope_id, [{"family": family, "limit": 1}])
    assert response.status_code == 503
    assert response.json() == {
        "error": {
            "code": "retrieval_unavailable",
            "message": "A configured retrieval or storage service failed.",
            "details": None,
        }
    }


def test_empty_sections_read_no_candidates(faulty_server: Any) -> None:
    """A2/R: with every family's reads failing, `sections: []` is still the empty 200."""
    http = faulty_server(*READS)
    scope_id = new_scope(http)
    response = ask(http, scope_id, [])
    assert response.status_code == 200 and response.json()["status"] == "empty"


def test_legacy_prepare_fails_when_a_legacy_family_fails(faulty_server: Any) -> None:
    http = faulty_server("topic-memory")
    scope_id = seed(http)
    assert ask(http, scope_id, None).status_code == 503


def test_legacy_prepare_never_reads_profile(faulty_server: Any) -> None:
    http = faulty_server("profile")
    scope_id = seed(http)
    assert ask(http, scope_id, None).status_code == 200
