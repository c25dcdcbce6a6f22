from __future__ import annotations

from pathlib import Path

import pytest

from devtools.seekdb import SeekdbServer


@pytest.fixture
def urls(tmp_path: Path, request: pytest.FixtureRequest) -> dict[str, str]:
    """A factory of empty databases by name: `sqlite…` a file in the test's directory, any other
    a fresh database on the session's seekdb (which starts only when one is asked for)."""

    class Urls(dict[str, str]):
        def __missing__(self, key: str) -> str:
            if key.startswith("sqlite"):
                url = f"sqlite:///{tmp_path / (key + '.sqlite3')}"
            else:
                server: SeekdbServer = request.getfixturevalue("seekdb")
                url = server.new_database_url()
            self[key] = url
            return url

    return Urls()
