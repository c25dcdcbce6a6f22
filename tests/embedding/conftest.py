"""The embedding leg's fixtures: the real model behind the loopback OpenAI-compatible server
(`devtools.embedding_server`), once per session, and what tests read of stored vectors."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

from devtools.embedding_models import DEFAULT
from devtools.embedding_server import DIMENSIONS, MODEL, EmbeddingServer
from eval.hybrid import read_rows
from powercontext_server.settings import HttpSettings
from tests.api import test_memory_expiry
from tests.api.helpers import new_scope
from tests.conftest import LiveServer, settings_for


@pytest.fixture(scope="session")
def model_embed() -> Callable[[Sequence[str]], Any]:
    return DEFAULT.load()


@pytest.fixture(scope="session")
def model_server(model_embed: Callable[[Sequence[str]], Any]) -> Iterator[EmbeddingServer]:
    with EmbeddingServer(model_embed) as server:
        yield server


@pytest.fixture
def leg_server(start_server: Callable[..., Any], model_server: EmbeddingServer) -> Any:
    """A private server (on the test's backend) with the leg on, behind the real model."""
    return start_server(**leg_env(model_server.url))


# The expiry tests' clock, for the leg's expiry test.
set_clock = test_memory_expiry.set_clock

T = TypeVar("T")
Rows = list[tuple[str, str, int, bytes]]
ArtifactRows = list[tuple[str, str, int, str, int, bytes]]


# The query deadline of a server that uses the real model: these tests check recall by meaning, not
# the deadline (the fault tests keep the server's default), and a 6-layer BERT on a busy 2-core
# machine can take longer than that default, which would make them answer lexically.
MODEL_TIMEOUT_MS = 10_000


def leg_env(
    url: str,
    model: str = MODEL,
    dims: int = DIMENSIONS,
    timeout_ms: int | None = MODEL_TIMEOUT_MS,
    **more: str,
) -> dict[str, str]:
    """A server's embedding settings; `timeout_ms` None keeps the server's default deadline."""
    deadline = {} if timeout_ms is None else {"POWERCONTEXT_SERVER_EMBEDDING_TIMEOUT_MS": str(timeout_ms)}
    return {
        "POWERCONTEXT_SERVER_EMBEDDING_URL": url,
        "POWERCONTEXT_SERVER_EMBEDDING_MODEL": model,
        "POWERCONTEXT_SERVER_EMBEDDING_DIMENSIONS": str(dims),
        **deadline,
        **more,
    }


def stored_vectors(server: Any) -> Rows:
    """(entry_version_id, model, dims, vector bytes) of every stored vector, read from the database."""
    rows = read_rows(
        server.application.settings.database_url,
        "SELECT v.entry_version_id, m.model, m.dims, m.vector FROM memory_vectors m"
        " LEFT JOIN memory_entry_versions v ON v.version_key = m.version_key ORDER BY m.vector_key",
    )
    return [(str(r[0]), str(r[1]), int(r[2]), bytes(r[3])) for r in rows]


def stored_artifact_vectors(server: Any) -> ArtifactRows:
    """(family, artifact_id, revision, model, dims, vector bytes) of every stored vector of an
    Experience or Topic Memory revision, read from the database."""
    rows = read_rows(
        server.application.settings.database_url,
        "SELECT r.family, r.artifact_id, r.revision, v.model, v.dims, v.vector FROM artifact_vectors v"
        " LEFT JOIN artifact_revisions r ON r.revision_key = v.revision_key ORDER BY v.vector_key",
    )
    return [(str(r[0]), str(r[1]), int(r[2]), str(r[3]), int(r[4]), bytes(r[5])) for r in rows]


def wait_for_vectors(server: Any, count: int, model: str = MODEL) -> Rows:
    """The stored vectors once `count` of `model` are there (the embedder works in the background)."""
    return wait_until(server, lambda rows: len([row for row in rows if row[1] == model]) >= count)


def wait_until(server: Any, done: Callable[[Any], bool], read: Callable[[Any], Any] = stored_vectors) -> Any:
    """What `read` reads of the server's vectors once `done` holds for it (or after a minute: the
    caller's assertion fails)."""
    deadline = time.monotonic() + 60
    while True:
        found = read(server)
        if done(found) or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def on_both_backends(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    env: dict[str, str],
    scope_id: str,
    run: Callable[[httpx.Client, LiveServer], T],
) -> dict[str, T]:
    """What `run` gives on a fresh server with `env` over SQLite and over OceanBase, one after the
    other, once `scope_id` is created on it (the same id: it is in the prepared text)."""
    seekdb = request.getfixturevalue("seekdb")
    urls = {"sqlite": f"sqlite:///{tmp_path / 'parity.sqlite3'}", "oceanbase": seekdb.new_database_url()}
    found: dict[str, T] = {}
    for name, url in urls.items():
        server = LiveServer(
            settings_for(tmp_path / name, POWERCONTEXT_SERVER_DATABASE_URL=url),
            http=HttpSettings.from_env(env),
        )
        server.start()
        try:
            with httpx.Client(base_url=server.base_url, timeout=30) as http:
                assert http.post("/v1/scopes", json={"scope_id": scope_id}).status_code == 201
                found[name] = run(http, server)
        finally:
            server.stop()
    return found


def lexical_and_hybrid(
    start_server: Callable[..., Any],
    url: str,
    write: Callable[[httpx.Client, str], None],
    embedded: Callable[[Any], object],
    read: Callable[[httpx.Client, str], T],
) -> tuple[dict[str, T], Any]:
    """What `read` finds in a new Scope that `write` filled, on a server without the leg and on one
    with it (the endpoint at `url`, read there once `embedded(server)` returned); and that second
    server. The first must store no vector: the leg is off by default."""
    found: dict[str, T] = {}
    for name, env in (("lexical", {}), ("hybrid", leg_env(url))):
        server = start_server(**env)
        with httpx.Client(base_url=server.base_url, timeout=30) as http:
            scope_id = new_scope(http)
            write(http, scope_id)
            if env:
                embedded(server)
            found[name] = read(http, scope_id)
        if not env:
            assert stored_vectors(server) == [] and stored_artifact_vectors(server) == []
    return found, server
