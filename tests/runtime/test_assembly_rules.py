"""A4 through the Runtime directly: the same semantic validation as HTTP, without the OpenAPI layer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from powercontext_runtime.bootstrap import open_application
from powercontext_runtime.config import Settings
from powercontext_runtime.errors import InvalidRequest
from powercontext_runtime.requests import CreateScope, PrepareContext, parse_request

from ..api.test_prepare_assembly import INVALID_ASSEMBLIES


@pytest.mark.parametrize("bad", INVALID_ASSEMBLIES)
def test_direct_runtime_calls_reject_every_invalid_assembly(tmp_path: Path, bad: dict[str, Any]) -> None:
    app = open_application(Settings(database_url=f"sqlite:///{tmp_path / 'db.sqlite3'}"))
    try:
        app.create_scope(parse_request(CreateScope, {"scope_id": "project:r"}))
        with pytest.raises(InvalidRequest) as caught:
            app.prepare_context(
                parse_request(PrepareContext, {"scope_id": "project:r", "query": "petrel", "assembly": bad})
            )
        assert all("petrel" not in e.msg for e in caught.value.errors)
    finally:
        app.close()


def test_assembly_null_is_rejected_by_the_runtime() -> None:
    with pytest.raises(InvalidRequest):
        parse_request(PrepareContext, {"scope_id": "s", "query": "q", "assembly": None})


def test_total_limit_follows_the_configured_policy(tmp_path: Path) -> None:
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'db.sqlite3'}", assembly_max_entries=3)
    app = open_application(settings)
    try:
        app.create_scope(parse_request(CreateScope, {"scope_id": "project:r"}))
        ok = {"sections": [{"family": "memory", "limit": 2}, {"family": "experience", "limit": 1}]}
        assert (
            app.prepare_context(
                parse_request(PrepareContext, {"scope_id": "project:r", "query": "q", "assembly": ok})
            ).status
            == "empty"
        )
        with pytest.raises(InvalidRequest):
            app.prepare_context(
                parse_request(PrepareContext, {"scope_id": "project:r", "query": "q", "assembly": {}})
            )
    finally:
        app.close()


def test_runtime_and_contract_agree_on_scope_ids() -> None:
    """The Runtime's own Scope id rule is the contract's, character for character."""
    import yaml

    from powercontext_runtime.requests import SCOPE_ID_PATTERN
    from powercontext_server.app import default_spec_path

    spec = yaml.safe_load(default_spec_path().read_text(encoding="utf-8"))
    assert spec["components"]["schemas"]["ScopeId"]["pattern"] == SCOPE_ID_PATTERN
