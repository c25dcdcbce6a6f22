"""Every operation of the contract is a client method and a command without hand-written code per
operation: `make api-generate` emits the methods, the CLI builds its commands from them."""

from __future__ import annotations

import copy
import inspect
from typing import Any

import httpx

from devtools.api_generate import load_spec, operations, resolved, success_model
from devtools.api_generate_client import client_module
from powercontext_api import operations as table
from powercontext_client import AsyncPowerContextClient, PowerContextClient
from powercontext_client._conveniences import method, method_name
from powercontext_client.cli import build_parser

from .client_recorder import BASE_URL


def generated(spec: dict[str, Any]) -> str:
    return client_module(
        spec,
        operations(spec),
        lambda schema: resolved(spec, schema),
        lambda operation: success_model(operation, spec)[1],
    )


def test_every_operation_is_a_method_of_both_clients() -> None:
    for operation in table.OPERATIONS:
        name = method_name(operation.operation_id)
        assert callable(getattr(PowerContextClient, name, None)), name
        assert inspect.iscoroutinefunction(getattr(AsyncPowerContextClient, name)), name


def test_every_operation_with_a_method_is_a_command() -> None:
    (subparsers,) = [a for a in build_parser({})._actions if a.dest == "command"]
    commands = set(subparsers.choices)  # type: ignore[attr-defined]
    for operation in table.OPERATIONS:
        command = method(operation.operation_id).command
        expected = method_name(operation.operation_id).replace("_", "-") if command is None else command
        assert not expected or expected in commands, operation.operation_id


def test_the_named_method_sends_what_call_sends() -> None:
    sent: list[tuple[str, bytes, bytes]] = []
    profile = {"artifact": {"family": "profile", "artifact_id": "profile", "revision": 1}, "content": "# P\n"}

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append((request.method, request.url.raw_path, request.read()))
        return httpx.Response(200, json=profile)

    with PowerContextClient(BASE_URL, transport=httpx.MockTransport(handler)) as pc:
        named = pc.get_profile("project:demo")
        called = pc.call(table.GET_PROFILE, {"scope_id": "project:demo"})
    assert named == called
    assert sent[0] == sent[1] == ("POST", b"/v1/profile/get", b'{"scope_id":"project:demo"}')


def test_a_new_operation_in_the_spec_is_a_typed_method_with_no_client_code() -> None:
    spec = copy.deepcopy(load_spec())
    spec["paths"]["/v1/memory/count"] = {
        "post": {
            **copy.deepcopy(spec["paths"]["/v1/memory/search"]["post"]),
            "operationId": "count_memory",
            "summary": "Count the entries a query finds.",
        }
    }
    source = generated(spec)
    for kind in ("    def count_memory(", "    async def count_memory("):
        start = source.index(kind)
        signature = source[start : source.index(":\n", source.index(") ->", start))]
        assert (
            "scope_id: str,\n        *,\n        query: str,\n        limit: int | None = None," in signature
        )
        assert signature.endswith("-> models.MemorySearchResult")
    assert "`POST /v1/memory/count`: Count the entries a query finds." in source
    assert "operations.COUNT_MEMORY, {'scope_id': scope_id, 'query': query, 'limit': limit}" in source
