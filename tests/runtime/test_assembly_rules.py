"""A4 through the Runtime directly: the generated request models plus the Runtime's own rules
refuse exactly what HTTP refuses, with no restatement of the contract in between."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from powercontext_api.models import PrepareContextRequest, ScopeCreateRequest
from powercontext_runtime import InvalidRequest, Settings, open_application

from ..api.test_prepare_assembly import INVALID_ASSEMBLIES


@pytest.mark.parametrize("bad", INVALID_ASSEMBLIES)
def test_direct_runtime_calls_reject_every_invalid_assembly(tmp_path: Path, bad: dict[str, Any]) -> None:
    app = open_application(Settings(database_url=f"sqlite:///{tmp_path / 'db.sqlite3'}"))
    try:
        app.create_scope(ScopeCreateRequest(scope_id="project:r"))
        with pytest.raises((ValidationError, InvalidRequest)) as caught:
            request = PrepareContextRequest.model_validate(
                {"scope_id": "project:r", "query": "petrel", "assembly": bad}
            )
            app.prepare_context(request)
        if isinstance(caught.value, InvalidRequest):
            assert all("petrel" not in e.msg for e in caught.value.errors)
    finally:
        app.close()


def test_assembly_null_is_rejected_by_the_generated_model() -> None:
    with pytest.raises(ValidationError):
        PrepareContextRequest.model_validate({"scope_id": "s", "query": "q", "assembly": None})


@pytest.mark.parametrize("value", ["1000", True, 1000.5])
def test_generated_models_are_strict(value: object) -> None:
    """`"1000"` is not an integer and `true` is not a number, for a direct call as over HTTP."""
    with pytest.raises(ValidationError):
        PrepareContextRequest.model_validate({"scope_id": "s", "query": "q", "max_bytes": value})


def test_total_limit_follows_the_configured_policy(tmp_path: Path) -> None:
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'db.sqlite3'}", assembly_max_entries=3)
    app = open_application(settings)
    try:
        app.create_scope(ScopeCreateRequest(scope_id="project:r"))
        ok = {"sections": [{"family": "memory", "limit": 2}, {"family": "experience", "limit": 1}]}
        request = PrepareContextRequest.model_validate(
            {"scope_id": "project:r", "query": "q", "assembly": ok}
        )
        assert app.prepare_context(request).status == "empty"
        with pytest.raises(InvalidRequest) as caught:
            app.prepare_context(
                PrepareContextRequest.model_validate({"scope_id": "project:r", "query": "q", "assembly": {}})
            )
        assert [e.type for e in caught.value.errors] == ["too_many_entries"]
    finally:
        app.close()
