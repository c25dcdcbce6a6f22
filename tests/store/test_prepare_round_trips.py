"""A prepare reads in one snapshot (`Store.reading()`), and there it looks its Scopes' keys and
their index statistics up once, not once per family it searches: on OceanBase each lookup is a
round trip."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from powercontext_api.models import PrepareContextRequest
from powercontext_runtime import ScopedContextApplication, Settings, open_application
from tests.conftest import database_env
from tests.store.test_backend_parity import seed

LOOKUPS = ("SELECT scope_id, scope_key, ", "SELECT scope_key, family, generation")
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
    assert [len([sql for sql in statements if sql.startswith(lookup)]) for lookup in LOOKUPS] == [1, 1]
    assert "contract" in first and "Experience" in first
    statements.clear()
    assert app.prepare_context(PrepareContextRequest.model_validate(request)).content == first
    # Not kept past its snapshot:
    assert [len([sql for sql in statements if sql.startswith(lookup)]) for lookup in LOOKUPS] == [1, 1]
