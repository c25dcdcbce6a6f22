"""The Runtime serves the generated operation table one-to-one, and checks each declared access."""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from powercontext_api.models import GetScopeParameters, ScopeCreateRequest
from powercontext_api.operations import OPERATIONS
from powercontext_runtime import (
    Forbidden,
    Grant,
    Principal,
    ScopedContextApplication,
    Settings,
    open_application,
)

STREAM = "application/x-ndjson"


def test_every_operation_is_one_runtime_method_taking_its_generated_models() -> None:
    """A streamed body reaches the method as its lines, and a streamed answer leaves it as chunks."""
    for operation in OPERATIONS:
        method = getattr(ScopedContextApplication, operation.operation_id)
        parameters = list(inspect.signature(method).parameters.values())[1:]
        positional = [p for p in parameters if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
        body = Iterable[bytes] if operation.body_media_type == STREAM else operation.body_model
        expected = [m for m in (operation.parameters_model, body) if m is not None]
        hints = inspect.get_annotations(method, eval_str=True)
        assert [hints[p.name] for p in positional] == expected, operation.operation_id
        if operation.response_media_type == STREAM:
            assert hints["return"] == Iterator[bytes], operation.operation_id
        else:
            assert hints["return"] is operation.response_model, operation.operation_id
        assert "principal" in {p.name for p in parameters}, operation.operation_id


def test_a_direct_call_meets_the_declared_access(tmp_path: Path) -> None:
    app = open_application(Settings(database_url=f"sqlite:///{tmp_path / 'db.sqlite3'}"))
    try:
        app.create_scope(ScopeCreateRequest(scope_id="project:a"))
        reader = Principal("reader", (Grant(frozenset({"scope.read"}), ("team:*",)),))
        with pytest.raises(Forbidden):
            app.get_scope(GetScopeParameters(scope_id="project:a"), principal=reader)
        with pytest.raises(Forbidden):
            app.create_scope(ScopeCreateRequest(scope_id="team:b"), principal=reader)
        assert app.health_live(principal=reader).status == "ok"
    finally:
        app.close()
