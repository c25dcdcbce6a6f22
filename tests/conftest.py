"""Shared fixtures.

Server: `live_server` (base URL of a real uvicorn on 127.0.0.1 with a temporary SQLite data dir,
one per test session), `http` (an `httpx.Client` bound to it) and `fresh_scope` (a new Scope id per
test, created through the API).
"""

from __future__ import annotations

import socket
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn

from devtools.seekdb import SeekdbServer
from powercontext_runtime import ScopedContextApplication, Settings, backend_for, open_application
from powercontext_runtime.store.sql_store import SqlStore
from powercontext_server.settings import HttpSettings

# The public-path suite runs once per backend: the embedded default and OceanBase (seekdb).
BACKENDS = ("sqlite", "oceanbase")
# An httpx client with these limits sends each request on a new connection (where a test wants the
# kernel to spread requests over worker processes), without the 50 ms of building a client for each.
NO_KEEPALIVE = httpx.Limits(max_keepalive_connections=0)


def settings_for(data_dir: Path, **env: str) -> Settings:
    """Settings as the server reads them; SQLite under `data_dir` unless env names a database URL."""
    return Settings.from_env({"POWERCONTEXT_SERVER_DATA_DIR": str(data_dir), **env})


@pytest.fixture(scope="session")
def seekdb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SeekdbServer]:
    """One real OceanBase seekdb server for the session, started only when a test needs it."""
    server = SeekdbServer(tmp_path_factory.mktemp("seekdb"))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def migrated_oceanbase(seekdb: SeekdbServer) -> str:
    """URL of a database on `seekdb` the runtime migrated and nothing wrote to since: the tests'
    fresh OceanBase databases are copies of it (tests/store/test_migrated_copy.py checks they are
    the same schema), as migrating each from empty took most of a second of seekdb's CPU."""
    url = seekdb.new_database_url()
    SqlStore(backend_for(url)).close()
    return url


def database_env(request: pytest.FixtureRequest, backend: str) -> dict[str, str]:
    """Environment selecting a fresh database on `backend`, empty but for a migrated schema on
    OceanBase (SQLite's takes a few milliseconds to migrate, so it is left empty)."""
    if backend == "oceanbase":
        seekdb_server: SeekdbServer = request.getfixturevalue("seekdb")
        template = request.getfixturevalue("migrated_oceanbase")
        return {"POWERCONTEXT_SERVER_DATABASE_URL": seekdb_server.copy_database_url(template)}
    return {}


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


class LiveServer:
    """uvicorn serving `create_app` in a background thread on a socket bound before it starts, with
    the uvicorn options of `powercontext serve` (so its HTTP edge and limits), logging quieter."""

    def __init__(
        self,
        settings: Settings,
        application: ScopedContextApplication | None = None,
        http: HttpSettings | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        from powercontext_server.app import create_app
        from powercontext_server.http_edge import uvicorn_options

        http = http or HttpSettings()
        self.application = application or open_application(settings)
        app = create_app(self.application, http, **({} if clock is None else {"clock": clock}))
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind(("127.0.0.1", 0))
        port = self._socket.getsockname()[1]
        self.base_url = f"http://127.0.0.1:{port}"
        config = uvicorn.Config(app, **{**uvicorn_options(http), "log_level": "warning", "lifespan": "off"})
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, name="live-server", daemon=True
        )

    def start(self) -> None:
        self._thread.start()
        for _ in range(500):
            if self._server.started:
                return
            if not self._thread.is_alive():
                raise RuntimeError("uvicorn exited during startup")
            threading.Event().wait(0.01)
        raise RuntimeError("uvicorn did not start within 5 s")

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._socket.close()
        self.application.close()


@pytest.fixture(scope="session", params=BACKENDS)
def live_server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL (no trailing slash) of a real server shared by the session, once per backend."""
    env = database_env(request, str(request.param))
    server = LiveServer(settings_for(tmp_path_factory.mktemp("live-server-data"), **env))
    server.start()
    try:
        yield server.base_url
    finally:
        server.stop()


@pytest.fixture(scope="session")
def http(live_server: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=live_server, timeout=30.0) as client:
        yield client


@pytest.fixture
def fresh_scope(http: httpx.Client) -> str:
    """The id of a Scope created for this test alone."""
    scope_id = f"test:{uuid.uuid4().hex}"
    response = http.post("/v1/scopes", json={"scope_id": scope_id, "title": "Test Scope"})
    assert response.status_code == 201, response.text
    return scope_id


@pytest.fixture
def start_server(
    request: pytest.FixtureRequest, backend: str, tmp_path: Path
) -> Iterator[Callable[..., LiveServer]]:
    """Factory for a private server (own data dir, settings from `env`) when a test must change it;
    `clock`, when given, times its embedding leg's back-off.

    The returned `LiveServer` exposes `base_url` and `application` (the Runtime it serves).
    """
    servers: list[LiveServer] = []

    def start(clock: Callable[[], float] | None = None, **env: str) -> LiveServer:
        server = LiveServer(
            settings_for(tmp_path / f"data-{len(servers)}", **database_env(request, backend), **env),
            http=HttpSettings.from_env(env),
            clock=clock,
        )
        server.start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()
