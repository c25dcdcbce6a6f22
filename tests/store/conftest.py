from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from devtools.seekdb import SeekdbServer
from powercontext_runtime.store import backends


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


@pytest.fixture
def statements(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every statement any store's connection runs from here on."""
    sent: list[str] = []
    for conn_class in (backends._SqliteConn, backends._MysqlConn):
        original = conn_class.execute

        def recording(
            self: object, sql: str, params: Sequence[object] = (), _run: object = original
        ) -> object:
            sent.append(sql)
            return _run(self, sql, params)  # type: ignore[operator]

        monkeypatch.setattr(conn_class, "execute", recording)
        reads = conn_class.read_all

        def recording_reads(
            self: object, queries: Sequence[tuple[str, Sequence[object]]], _run: object = reads
        ) -> object:
            sent.extend(sql for sql, _ in queries)
            return _run(self, queries)  # type: ignore[operator]

        monkeypatch.setattr(conn_class, "read_all", recording_reads)
    yield sent
