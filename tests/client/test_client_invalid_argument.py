"""An argument that breaks the contract raises `InvalidArgumentError` before anything is sent.

It is the client's own error (a `PowerContextError`, and a `ValueError`), with pydantic's
`ValidationError` as its cause, from every way a request is built: the named methods, the path
parameters and `call`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from pydantic import ValidationError

from powercontext_api import operations
from powercontext_client import InvalidArgumentError, PowerContextClient, PowerContextError

from .client_recorder import READY, Recorder, reply

CASES: list[tuple[str, Callable[[PowerContextClient], Any], str]] = [
    ("body", lambda pc: pc.prepare_context("project:demo", " "), "query: must not be blank"),
    (
        "range",
        lambda pc: pc.prepare_context("project:demo", "q", max_bytes=100),
        "max_bytes: Input should be",
    ),
    (
        "path",
        lambda pc: pc.get_scope("a/b"),
        "scope_id: must not be blank or hold /, % or control characters",
    ),
    (
        "call-body",
        lambda pc: pc.call(operations.GET_PROFILE, {"scope_id": "project:demo", "colour": 1}),
        "colour: Extra inputs are not permitted",
    ),
    (
        "call-path",
        lambda pc: pc.call(
            operations.GET_ARTIFACT_REVISION,
            path={"scope_id": "p", "family": "memory", "artifact_id": "memory", "revision": 0},
        ),
        "revision: Input should be greater than or equal to 1",
    ),
]


@pytest.mark.parametrize(("name", "send", "message"), CASES, ids=[c[0] for c in CASES])
def test_invalid_arguments_raise_the_clients_error_with_pydantics_as_cause(
    name: str, send: Callable[[PowerContextClient], Any], message: str
) -> None:
    recorder = Recorder(reply(200, READY))
    with recorder.client() as pc, pytest.raises(InvalidArgumentError) as caught:
        send(pc)
    error = caught.value
    assert isinstance(error, PowerContextError) and isinstance(error, ValueError)
    assert isinstance(error.__cause__, ValidationError)
    assert str(error).startswith(message), str(error)
    assert recorder.requests == []


async def test_async_client_raises_the_same_error() -> None:
    recorder = Recorder(reply(200, READY))
    async with recorder.async_client() as pc:
        with pytest.raises(InvalidArgumentError) as caught:
            await pc.search_memory("project:demo", "q", limit=0)
    assert str(caught.value) == "limit: Input should be greater than or equal to 1"
    assert recorder.requests == []
