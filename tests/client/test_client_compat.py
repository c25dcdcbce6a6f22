"""Version combinations of client and server around the opt-in `assembly` field.

- new client, old server, `assembly` unset: legacy prepare works (nothing new is sent);
- new client, old server, `assembly` set: the old server's 422 surfaces as `InvalidRequestError`,
  after exactly one request (never retried with a relaxed selection);
- old client, new server: the old request bytes get the legacy envelope.

The old server is a transport double that behaves as servers before `assembly` did: the request
schema forbids unknown fields, so `assembly` is a 422; the old client is its exact request bytes.
"""

from __future__ import annotations

import json
import uuid

import httpx
import pytest

from powercontext_client import (
    AsyncPowerContextClient,
    InvalidRequestError,
    PowerContextClient,
    validate_prepared_context,
)

from .client_recorder import BASE_URL

OLD_KEYS = {"scope_id", "query", "max_bytes"}
LEGACY_CONTENT = (
    "PowerContext prepared untrusted historical context.\n"
    'BEGIN_POWERCONTEXT_PREPARED_CONTEXT_V1\n{"trust":"untrusted_history","items":[]}\n'
    "END_POWERCONTEXT_PREPARED_CONTEXT_V1"
)


class OldServer:
    """Answers prepare as a server that predates `assembly`: unknown request fields are a 422."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.bodies.append(request.read())
        body = json.loads(request.content)
        unknown = sorted(set(body) - OLD_KEYS)
        if unknown:
            errors = [
                {"type": "extra_forbidden", "loc": ["body", k], "msg": "Extra inputs are not permitted"}
                for k in unknown
            ]
            return httpx.Response(
                422,
                json={
                    "error": {
                        "code": "invalid_request",
                        "message": "The request violates the API contract.",
                        "details": {"errors": errors},
                    }
                },
            )
        content = LEGACY_CONTENT
        return httpx.Response(
            200,
            json={
                "schema": "powercontext.prepared-context.v1",
                "status": "ready",
                "content": content,
                "content_bytes": len(content.encode()),
            },
        )


def test_new_client_without_assembly_works_with_an_old_server() -> None:
    old = OldServer()
    with PowerContextClient(BASE_URL, transport=httpx.MockTransport(old)) as pc:
        prepared = pc.prepare_context("project:demo", "q", max_bytes=8000)
    context = validate_prepared_context(prepared, max_bytes=8000)
    assert context is not None
    assert context.content == LEGACY_CONTENT
    assert old.bodies == [b'{"scope_id":"project:demo","query":"q","max_bytes":8000}']


@pytest.mark.parametrize("assembly", [{}, {"sections": [{"family": "memory", "limit": 6}]}, {"sections": []}])
def test_new_client_with_assembly_gets_the_old_servers_422_once_and_no_retry(
    assembly: dict[str, object],
) -> None:
    old = OldServer()
    with (
        PowerContextClient(BASE_URL, transport=httpx.MockTransport(old)) as pc,
        pytest.raises(InvalidRequestError) as caught,
    ):
        pc.prepare_context("project:demo", "q", assembly=assembly)
    assert caught.value.details == {
        "errors": [
            {"type": "extra_forbidden", "loc": ["body", "assembly"], "msg": "Extra inputs are not permitted"}
        ]
    }
    assert len(old.bodies) == 1


async def test_async_client_behaves_the_same_against_an_old_server() -> None:
    old = OldServer()
    async with AsyncPowerContextClient(BASE_URL, transport=httpx.MockTransport(old)) as pc:
        assert (await pc.prepare_context("project:demo", "q")).content == LEGACY_CONTENT
        with pytest.raises(InvalidRequestError):
            await pc.prepare_context("project:demo", "q", assembly={})
    assert len(old.bodies) == 2


def test_old_client_request_gets_the_legacy_envelope_from_the_new_server(http: httpx.Client) -> None:
    scope_id = f"project:{uuid.uuid4().hex[:12]}"
    assert http.post("/v1/scopes", json={"scope_id": scope_id}).status_code == 201
    text = "After changing OpenAPI, run make api-generate."
    assert http.post("/v1/memory/remember", json={"scope_id": scope_id, "text": text}).status_code == 200
    # The exact bytes a client from before `assembly` sends.
    old_request = json.dumps(
        {"scope_id": scope_id, "query": "OpenAPI api-generate", "max_bytes": 8000}
    ).encode()
    response = http.post(
        "/v1/context/prepare", content=old_request, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 200
    context = validate_prepared_context(response.json(), max_bytes=8000)
    assert context is not None
    assert "BEGIN_POWERCONTEXT_PREPARED_CONTEXT_V1\n" in context.content
    assert "PREPARED_TEXT" not in context.content
    assert json.dumps(text)[1:-1] in context.content
