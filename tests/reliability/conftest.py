"""Fixtures for the reliability tests: a private seekdb they may pause, kill and restart, real
`powercontext serve` processes they may kill. The HTTP helpers are in `helpers`.

The session-wide `seekdb` of tests/conftest.py is shared with other tests, so it is never touched
here: these tests start their own server on its own base directory and port.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from devtools.seekdb import SeekdbServer
from devtools.server_process import ServerProcess


@pytest.fixture(scope="session")
def private_seekdb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SeekdbServer]:
    server = SeekdbServer(tmp_path_factory.mktemp("reliability-seekdb"))
    yield server
    server.stop()


@pytest.fixture
def seekdb_server(private_seekdb: SeekdbServer) -> Iterator[SeekdbServer]:
    """The private seekdb, running; left running (resumed or restarted) whatever the test did."""
    private_seekdb.resume()
    if not private_seekdb.running:
        private_seekdb.restart()
    yield private_seekdb
    private_seekdb.resume()
    if not private_seekdb.running:
        private_seekdb.restart()


@pytest.fixture
def start_server(tmp_path: Path) -> Iterator[Callable[..., ServerProcess]]:
    """Start `powercontext serve` on a database URL (extra environment as keywords); all are
    stopped after the test."""
    servers: list[ServerProcess] = []

    def start(database_url: str, **env: str) -> ServerProcess:
        server = ServerProcess(database_url, tmp_path / f"server-{len(servers)}.log", env)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()
