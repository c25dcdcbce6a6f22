"""Fixtures of the Codex host tests: the real CLI must be installed, a fake model, a user's home."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.hosts.codex.session import CODEX, INSTALL_HINT, CodexHome, make_codex_home
from tests.hosts.fakes import RecordingServer, responses_reply


@pytest.fixture(autouse=True)
def codex_is_installed() -> None:
    """A missing CLI is a failure, not a skip: `make test` installs it."""
    assert CODEX.exists(), INSTALL_HINT


@pytest.fixture
def backend() -> str:
    """Private servers (`start_server`) on SQLite: the hooks speak only HTTP, and tests/api covers
    the backends."""
    return "sqlite"


@pytest.fixture
def model() -> Iterator[RecordingServer]:
    """A fake OpenAI Responses API model that records what Codex sends it."""
    with RecordingServer(responses_reply) as server:
        yield server


@pytest.fixture
def home(tmp_path: Path, model: RecordingServer) -> CodexHome:
    """A user's home whose Codex settings name the fake model as their own provider."""
    return make_codex_home(tmp_path, model)
