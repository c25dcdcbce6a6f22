"""`create_scope(..., exist_ok=True)`: a taken id answers with the existing Scope, as it is."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from powercontext_client import AsyncPowerContextClient, ConflictError, PowerContextClient

from .client_recorder import BASE_URL, SCOPE


def conflict(code: str) -> httpx.Response:
    return httpx.Response(409, json={"error": {"code": code, "message": "m", "details": None}})


class Server:
    """Answers create_scope with `create` and get_scope with the existing Scope."""

    def __init__(self, create: httpx.Response) -> None:
        self.create = create
        self.requests: list[tuple[str, str]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append((request.method, request.url.path))
        return self.create if request.method == "POST" else httpx.Response(200, json=SCOPE)


def test_a_taken_id_returns_the_existing_scope_read_afterwards() -> None:
    server = Server(conflict("scope_exists"))
    with PowerContextClient(BASE_URL, transport=httpx.MockTransport(server)) as pc:
        scope = pc.create_scope("project:demo", title="Another title", exist_ok=True)
    assert scope.title == SCOPE["title"]  # unchanged: the existing Scope as it is
    assert server.requests == [("POST", "/v1/scopes"), ("GET", "/v1/scopes/project:demo")]


@pytest.mark.parametrize(
    ("kwargs", "code"),
    [({}, "scope_exists"), ({"exist_ok": False}, "scope_exists"), ({"exist_ok": True}, "revision_conflict")],
    ids=["default", "exist_ok-false", "another-conflict"],
)
def test_other_conflicts_and_exist_ok_false_still_raise(kwargs: dict[str, Any], code: str) -> None:
    server = Server(conflict(code))
    with (
        PowerContextClient(BASE_URL, transport=httpx.MockTransport(server)) as pc,
        pytest.raises(ConflictError) as caught,
    ):
        pc.create_scope("project:demo", **kwargs)
    assert caught.value.code == code
    assert server.requests == [("POST", "/v1/scopes")]


async def test_async_exist_ok_returns_the_existing_scope() -> None:
    server = Server(conflict("scope_exists"))
    async with AsyncPowerContextClient(BASE_URL, transport=httpx.MockTransport(server)) as pc:
        scope = await pc.create_scope("project:demo", exist_ok=True)
    assert scope.scope_id == SCOPE["scope_id"]
    assert server.requests[-1] == ("GET", "/v1/scopes/project:demo")


async def test_exist_ok_against_the_real_server(live_server: str) -> None:
    scope_id = f"project:{uuid.uuid4().hex[:12]}"
    with PowerContextClient(live_server) as pc:
        created = pc.create_scope(scope_id, title="First", exist_ok=True)
        again = pc.create_scope(scope_id, title="Second", exist_ok=True)
        with pytest.raises(ConflictError):
            pc.create_scope(scope_id)
    async with AsyncPowerContextClient(live_server) as apc:
        async_again = await apc.create_scope(scope_id, exist_ok=True)
    assert created == again == async_again
    assert again.title == "First"
