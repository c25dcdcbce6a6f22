"""Host integration tests: the repository root is an import root, so `hosts.hermes...` imports."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


@pytest.fixture(scope="module")
def sqlite_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real server on SQLite for one module: the hook hosts speak only HTTP, so the backends'
    sameness is the business of tests/api, not of every host session."""
    from tests.conftest import LiveServer, settings_for

    server = LiveServer(settings_for(tmp_path_factory.mktemp("host-server-data")))
    server.start()
    try:
        yield server.base_url
    finally:
        server.stop()
