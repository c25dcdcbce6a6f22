"""A prepare reads in one snapshot (`Store.reading()`), and there it looks its Scopes' keys and
their index statistics up once, not once per family it searches; on OceanBase, where each
statement is a round trip, lookups that need no answer of each other go together."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymysql.connections
import pytest

from powercontext_api.models import PrepareContextRequest
from powercontext_runtime import ScopedContextApplication, Settings, open_application
from tests.conftest import database_env
from tests.store.test_backend_parity import seed

# The Scopes' keys, and their index statistics (joined to the Scopes selected by id).
LOOKUPS = ("SELECT scope_id, scope_key, ", " search_stats st ON st.scope_key = k.scope_key")
FOUR_FAMILIES = {
    "sections": [
        {"family": "profile", "limit": 3},
        {"family": "topic-memory", "limit": 2},
        {"family": "memory", "limit": 4},
        {"family": "experience", "limit": 2},
    ]
}


@pytest.fixture
def app(request: pytest.FixtureRequest, backend: str, tmp_path: Path) -> Iterator[ScopedContextApplication]:
    url = database_env(request, backend).get(
        "POWERCONTEXT_SERVER_DATABASE_URL", f"sqlite:///{tmp_path / 'p.sqlite3'}"
    )
    opened = open_application(Settings(database_url=url, assembly_max_entries=12))
    seed(opened)
    yield opened
    opened.close()


def test_a_four_family_prepare_looks_its_scopes_and_their_statistics_up_once(
    app: ScopedContextApplication, statements: list[str]
) -> None:
    request = {"scope_id": "project:a", "query": "contract api deploy 记忆", "assembly": FOUR_FAMILIES}
    statements.clear()
    first = app.prepare_context(PrepareContextRequest.model_validate(request)).content
    assert [len([sql for sql in statements if lookup in sql]) for lookup in LOOKUPS] == [1, 1]
    assert "contract" in first and "Experience" in first
    statements.clear()
    assert app.prepare_context(PrepareContextRequest.model_validate(request)).content == first
    # Not kept past its snapshot:
    assert [len([sql for sql in statements if lookup in sql]) for lookup in LOOKUPS] == [1, 1]


@pytest.mark.parametrize(
    ("assembly", "round_trips"),
    [
        # BEGIN, the Scope with its references, their keys (each Memory ranking's statistics and
        # expired heads with them), the hits' texts, COMMIT; each further family its texts.
        (None, 7),  # legacy: Memory, Experience twice (once for each of its two sections)
        ({}, 6),  # Memory and Experience
        (FOUR_FAMILIES, 8),  # and the three Scopes' Profiles in one statement, and Topic Memory
    ],
    ids=["legacy", "assembly", "four-families"],
)
def test_a_prepare_on_oceanbase_sends_a_round_trip_per_dependent_read(
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    assembly: dict[str, Any] | None,
    round_trips: int,
) -> None:
    opened = open_application(
        Settings(
            database_url=database_env(request, "oceanbase")["POWERCONTEXT_SERVER_DATABASE_URL"],
            assembly_max_entries=12,
        )
    )
    try:
        seed(opened)
        body = {"scope_id": "project:a", "query": "contract api deploy"}
        prepared = PrepareContextRequest.model_validate(
            body if assembly is None else {**body, "assembly": assembly}
        )
        opened.prepare_context(prepared)  # the search mirror loads the terms once
        sent: list[bytes | str] = []
        real = pymysql.connections.Connection._execute_command
        caller = threading.current_thread()

        def counted(self: Any, command: int, sql: Any) -> Any:
            if threading.current_thread() is caller:  # not the index merger's or the embedder's
                sent.append(sql)
            return real(self, command, sql)

        monkeypatch.setattr(pymysql.connections.Connection, "_execute_command", counted)
        content = opened.prepare_context(prepared).content
    finally:
        opened.close()
    assert "contract" in content
    assert len(sent) == round_trips, sent
