"""`AsyncPowerContextClient`: the same methods as `PowerContextClient`, the same bytes on the wire.

A transport double is right for the wire tests (they assert outbound bytes); the round trip at the
end runs against the real server of `live_server`.
"""

from __future__ import annotations

import inspect
import socket
import uuid
from typing import Any

import httpx
import pytest

from powercontext_api import operations
from powercontext_api.models import Assembly, PreparedContext
from powercontext_client import (
    UNSET,
    AsyncPowerContextClient,
    InvalidArgumentError,
    InvalidRequestError,
    NotFoundError,
    PowerContextClient,
    TransportError,
    validate_prepared_context,
)

from .client_recorder import CITATION, EMPTY, READY, Recorder, reply

PREFIX = b'{"scope_id":"project:demo","query":"q"'


# prepare_context: the four states of `assembly` ---------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "body"),
    [
        ({}, PREFIX + b"}"),
        ({"assembly": UNSET}, PREFIX + b"}"),
        ({"assembly": {}}, PREFIX + b',"assembly":{}}'),
        ({"assembly": Assembly()}, PREFIX + b',"assembly":{}}'),
        ({"max_bytes": 8000, "assembly": {}}, PREFIX + b',"max_bytes":8000,"assembly":{}}'),
        ({"assembly": {"sections": []}}, PREFIX + b',"assembly":{"sections":[]}}'),
        ({"assembly": Assembly(sections=[])}, PREFIX + b',"assembly":{"sections":[]}}'),
        ({"assembly": None}, PREFIX + b',"assembly":null}'),
        (
            {
                "assembly": {
                    "format": "markdown",
                    "sections": [{"family": "memory", "limit": 6}, {"family": "experience", "limit": 2}],
                    "show": [],
                }
            },
            PREFIX
            + b',"assembly":{"format":"markdown","sections":[{"family":"memory","limit":6},'
            + b'{"family":"experience","limit":2}],"show":[]}}',
        ),
    ],
    ids=[
        "omitted",
        "UNSET",
        "empty-object",
        "default-model",
        "max-bytes-and-empty-object",
        "empty-sections",
        "empty-sections-model",
        "explicit-null",
        "explicit-defaults",
    ],
)
async def test_async_prepare_sends_assembly_exactly_as_the_sync_client_does(
    kwargs: dict[str, Any], body: bytes
) -> None:
    recorder = Recorder(reply(200, READY))
    async with recorder.async_client() as pc:
        prepared = await pc.prepare_context("project:demo", "q", **kwargs)
    async_bytes = recorder.last.content
    with recorder.client() as sync_pc:
        sync_pc.prepare_context("project:demo", "q", **kwargs)
    assert async_bytes == recorder.last.content == body
    assert recorder.last.url.path == "/v1/context/prepare"
    assert isinstance(prepared, PreparedContext)


async def test_async_prepare_rejects_an_out_of_range_max_bytes_before_sending() -> None:
    recorder = Recorder(reply(200, READY))
    async with recorder.async_client() as pc:
        with pytest.raises(InvalidArgumentError):
            await pc.prepare_context("project:demo", "q", max_bytes=100)
    assert recorder.requests == []


# Every operation: same methods, same signatures, same requests ------------------------------------


def public_methods(cls: type) -> dict[str, Any]:
    """The public methods of `cls`, the generated ones it inherits included."""
    members = {name: getattr(cls, name) for name in dir(cls) if not name.startswith("_")}
    return {name: member for name, member in members.items() if callable(member)}


def test_async_client_has_every_method_of_the_sync_client_with_the_same_signature() -> None:
    sync_methods = public_methods(PowerContextClient)
    async_methods = public_methods(AsyncPowerContextClient)
    assert set(async_methods) == (set(sync_methods) - {"close"}) | {"aclose"}
    for name, method in sync_methods.items():
        if name == "close":
            continue
        assert inspect.iscoroutinefunction(async_methods[name]), name
        assert inspect.signature(async_methods[name]) == inspect.signature(method), name


FIELDS = {"situation": "s", "action": "a", "outcome": "o", "lesson": "l"}
EXPERIENCE_REF = {"family": "experience", "artifact_id": "experience-1", "revision": 1}
TOPIC_REF = {"family": "topic-memory", "artifact_id": "topic-1", "revision": 2}

CALLS: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
    ("health_live", (), {}),
    ("health_ready", (), {}),
    ("capabilities", (), {}),
    ("create_scope", ("project:demo",), {"title": "Demo", "context_references": ("team:a",)}),
    ("create_scope", ("project:demo",), {"summary": "S", "exist_ok": True}),
    ("get_scope", ("project:a b",), {}),
    ("get_scope_grants", ("project:a b",), {}),
    ("list_scopes", (), {"limit": 2, "cursor": "c"}),
    ("update_scope", ("project:demo",), {"expected_version": 1, "summary": ""}),
    ("delete_scope", ("project:a b",), {}),
    ("remember", ("project:demo", "t"), {"kind": "decision", "expected_revision": 0}),
    ("remember_batch", ("project:demo", ["t", {"text": "u"}]), {"kind": "note", "expected_revision": 1}),
    ("revise_memory_entry", ("project:demo", CITATION, "new"), {}),
    ("retire_memory_entry", ("project:demo", CITATION), {}),
    ("get_memory_entry", ("project:demo", CITATION), {}),
    ("get_memory_entry_history", ("project:demo",), {"entry_id": "entry-1"}),
    ("erase_memory_entry", ("project:demo", "entry-1"), {}),
    ("list_memory_entries", ("project:demo",), {"limit": 3}),
    ("search_memory", ("project:demo", "q"), {"limit": 4}),
    ("get_artifact_revision", ("project:demo", "experience", "experience-1", 1), {}),
    ("propose_experience", ("project:demo",), {**FIELDS, "artifact_id": "experience-1"}),
    ("search_experience", ("project:demo", "q"), {}),
    ("get_experience", ("project:demo", EXPERIENCE_REF), {}),
    ("propose_profile", ("project:demo", "# Demo\n"), {}),
    ("get_profile", ("project:demo",), {}),
    ("approve_candidate", ("project:demo", "candidate-1"), {"expected_version": 1}),
    ("reject_candidate", ("project:demo", "candidate-1"), {"expected_version": 2}),
    ("list_candidates", ("project:demo",), {"state": "pending"}),
    ("get_candidate", ("project:demo", "candidate-1"), {}),
    ("put_topic", ("project:demo",), {"title": "T", "summary": "S", "detail": ""}),
    ("search_topics", ("project:demo", "q"), {"limit": 1}),
    ("get_topic", ("project:demo", TOPIC_REF), {}),
    ("prepare_context", ("project:demo", "q"), {"max_bytes": 4000, "assembly": {"sections": []}}),
    ("explain_prepare_context", ("project:demo", "q"), {"assembly": {}}),
    ("export_scope", ("project:a b", [].append), {}),
    ("import_scope", ([b'{"scope_id": "x"}\n', b'{"type": "scope"}\n'],), {"scope_id": "project:a b"}),
    ("import_scope", (b'{"format": "powercontext.scope-export", "scope_id": "project:a b"}\n',), {}),
    ("call", (operations.GET_PROFILE, {"scope_id": "project:demo"}), {}),
    ("call", (operations.GET_ARTIFACT_REVISION,), {"path": {**EXPERIENCE_REF, "scope_id": "project:a b"}}),
]


def test_the_table_covers_every_method() -> None:
    assert {name for name, _, _ in CALLS} == set(public_methods(PowerContextClient)) - {"close"}


def wire(request: httpx.Request) -> tuple[str, bytes, bytes, str | None, str | None]:
    return (
        request.method,
        request.url.raw_path,
        request.content,
        request.headers.get("Content-Type"),
        request.headers.get("Authorization"),
    )


@pytest.mark.parametrize(("name", "args", "kwargs"), CALLS, ids=[c[0] for c in CALLS])
async def test_async_and_sync_clients_send_the_same_request(
    name: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    # The answer does not matter here: a 404 ends every call the same way in both clients.
    recorder = Recorder(reply(404, {"error": {"code": "not_found", "message": "m", "details": None}}))
    with recorder.client(token="t") as sync_pc, pytest.raises(NotFoundError):
        getattr(sync_pc, name)(*args, **kwargs)
    async with recorder.async_client(token="t") as async_pc:
        with pytest.raises(NotFoundError):
            await getattr(async_pc, name)(*args, **kwargs)
    sync_request, async_request = recorder.requests
    assert wire(sync_request) == wire(async_request)
    assert sync_request.headers["User-Agent"] == async_request.headers["User-Agent"]


# Errors --------------------------------------------------------------------------------------------


async def test_async_error_carries_status_code_message_details_and_request_id() -> None:
    details = {"errors": [{"type": "missing", "loc": ["body", "query"], "msg": "Field required"}]}
    body = {"error": {"code": "invalid_request", "message": "bad", "details": details}}
    recorder = Recorder(reply(422, body, {"X-PowerContext-Request-ID": "req-1"}))
    async with recorder.async_client() as pc:
        with pytest.raises(InvalidRequestError) as caught:
            await pc.prepare_context("project:demo", "q", assembly=None)
    error = caught.value
    assert (error.status, error.code, error.message, error.details, error.request_id) == (
        422,
        "invalid_request",
        "bad",
        details,
        "req-1",
    )


async def test_async_connection_refused_raises_transport_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    async with AsyncPowerContextClient(f"http://127.0.0.1:{port}", timeout=2.0) as pc:
        with pytest.raises(TransportError) as caught:
            await pc.health_live()
    assert isinstance(caught.value.__cause__, httpx.ConnectError)


async def test_async_token_is_sent_and_never_shown() -> None:
    recorder = Recorder(reply(200, {"status": "ok"}))
    async with recorder.async_client(token="s3cret") as pc:
        await pc.health_live()
        assert "s3cret" not in repr(pc)
    assert recorder.last.headers["Authorization"] == "Bearer s3cret"


# Against the real server ---------------------------------------------------------------------------


async def test_async_round_trip_remember_experience_and_prepare_text(live_server: str) -> None:
    scope_id = f"project:{uuid.uuid4().hex[:12]}"
    async with AsyncPowerContextClient(live_server) as pc:
        await pc.create_scope(scope_id, title="Async")
        entry = await pc.remember(scope_id, "Run make contract-test after changing the OpenAPI document.")
        candidate = await pc.propose_experience(scope_id, **FIELDS)
        approved = await pc.approve_candidate(
            scope_id, candidate.candidate_id, expected_version=candidate.version
        )
        assert approved.committed is not None
        assert (await pc.get_memory_entry(scope_id, entry.citation)).text == entry.text
        text = await pc.prepare_context(
            scope_id,
            "contract-test OpenAPI",
            max_bytes=4000,
            assembly={"sections": [{"family": "memory", "limit": 6}]},
        )
        legacy = await pc.prepare_context(scope_id, "contract-test OpenAPI")
        nothing = await pc.prepare_context(scope_id, "contract-test", assembly={"sections": []})
    context = validate_prepared_context(text, max_bytes=4000)
    assert context is not None
    assert "BEGIN_POWERCONTEXT_PREPARED_TEXT_V1" in context.content
    assert entry.text in context.content
    legacy_context = validate_prepared_context(legacy, max_bytes=8000)
    assert legacy_context is not None
    assert "BEGIN_POWERCONTEXT_PREPARED_CONTEXT_V1" in legacy_context.content
    assert validate_prepared_context(nothing, max_bytes=4000) is None
    assert nothing == PreparedContext.model_validate(EMPTY)


async def test_async_null_assembly_is_a_422_from_the_real_server(live_server: str, fresh_scope: str) -> None:
    async with AsyncPowerContextClient(live_server) as pc:
        with pytest.raises(InvalidRequestError) as caught:
            await pc.prepare_context(fresh_scope, "q", assembly=None)
    assert caught.value.code == "invalid_request"
