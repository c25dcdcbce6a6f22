"""The client's `exclude_unset` serialisation against the RFC's words, on the outbound JSON.

RFC ("Compatibility and integration"): "The Python Client uses
TypeAdapter(...).dump_python(..., by_alias=True) for normal request serialization. For
prepare_context, it removes assembly when that field was not supplied. Explicit assembly: null
remains an invalid request [...]. Outbound JSON regression tests cover omission, explicit defaults,
and empty sections."

The client adds `exclude_unset=True`, so a field the caller did not set is left for the server's
default instead of being written out. These tests record the request bytes the client sends for
omission, explicit defaults and empty sections (every way to spell each), put next to them the body
the RFC's serialisation writes for the same call, and show that the two are the same request: the
same model once validated, and byte-identical answers from a real server.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from pydantic import TypeAdapter

from powercontext_api import operations
from powercontext_api.models import Assembly, PrepareContextRequest
from powercontext_client import PowerContextClient

from ..api.helpers import experience, new_scope, remember
from .client_recorder import READY, Recorder, reply

PREFIX = '{"scope_id":"project:demo","query":"q"'
DEFAULTS_WRITTEN = {
    "format": "markdown",
    "sections": [{"family": "memory", "limit": 6}, {"family": "experience", "limit": 2}],
    "show": [],
}
DEFAULTS_JSON = json.dumps(DEFAULTS_WRITTEN, separators=(",", ":"))

# name -> (prepare_context keyword arguments, the exact body the client sends)
CASES: dict[str, tuple[dict[str, Any], str]] = {
    "omitted": ({}, PREFIX + "}"),
    "omitted, max_bytes given": ({"max_bytes": 8000}, PREFIX + ',"max_bytes":8000}'),
    "defaults as {}": ({"assembly": {}}, PREFIX + ',"assembly":{}}'),
    "defaults as Assembly()": ({"assembly": Assembly()}, PREFIX + ',"assembly":{}}'),
    "defaults written out": ({"assembly": DEFAULTS_WRITTEN}, PREFIX + f',"assembly":{DEFAULTS_JSON}}}'),
    "defaults written out as a model": (
        {"assembly": Assembly.model_validate(DEFAULTS_WRITTEN)},
        PREFIX + f',"assembly":{DEFAULTS_JSON}}}',
    ),
    "empty sections": ({"assembly": {"sections": []}}, PREFIX + ',"assembly":{"sections":[]}}'),
    "empty sections as a model": (
        {"assembly": Assembly(sections=[])},
        PREFIX + ',"assembly":{"sections":[]}}',
    ),
}


def sent_by_client(**kwargs: Any) -> bytes:
    recorder = Recorder(reply(200, READY))
    with recorder.client() as pc:
        pc.prepare_context("project:demo", "q", **kwargs)
    return recorder.last.content


def rfc_body(client_body: dict[str, Any]) -> dict[str, Any]:
    """The RFC's serialisation of the same call: the request model dumped by alias with every
    field, and `assembly` removed when it was not supplied."""
    request = PrepareContextRequest.model_validate(client_body)
    dumped: dict[str, Any] = TypeAdapter(PrepareContextRequest).dump_python(
        request, mode="json", by_alias=True
    )
    if "assembly" not in client_body:
        dumped.pop("assembly", None)
    return dumped


@pytest.mark.parametrize(("kwargs", "body"), CASES.values(), ids=CASES.keys())
def test_outbound_json_for_omission_explicit_defaults_and_empty_sections(
    kwargs: dict[str, Any], body: str
) -> None:
    """R: "Outbound JSON regression tests cover omission, explicit defaults, and empty sections."
    and "For prepare_context, it removes assembly when that field was not supplied."

    The exact bytes, the same from the named method and from `call()` with the generated
    operation, and `assembly` present exactly when the caller supplied it.
    """
    sent = sent_by_client(**kwargs)
    assert sent == body.encode("utf-8")
    assert ("assembly" in json.loads(sent)) == ("assembly" in kwargs)
    recorder = Recorder(reply(200, READY))
    with recorder.client() as pc:
        request: dict[str, Any] = {"scope_id": "project:demo", "query": "q", **kwargs}
        pc.call(operations.PREPARE_CONTEXT, request)
    assert recorder.last.content == sent


@pytest.mark.parametrize(("kwargs", "body"), CASES.values(), ids=CASES.keys())
def test_the_client_body_and_the_rfc_serialisation_are_the_same_request(
    kwargs: dict[str, Any], body: str
) -> None:
    """R: "The Python Client uses TypeAdapter(...).dump_python(..., by_alias=True)": the RFC's
    body may write out defaults the client leaves to the server (`max_bytes` 8000, the default
    `format`, `sections` and `show`), and nothing else differs; validated, the two are one request.
    """
    client_body = json.loads(body)
    rfc = rfc_body(client_body)
    assert ("assembly" in rfc) == ("assembly" in client_body)
    defaults = {"max_bytes": 8000, **({"assembly": DEFAULTS_WRITTEN} if "assembly" in client_body else {})}
    for key, value in rfc.items():
        if key not in client_body:
            assert defaults[key] == value  # a whole default the client did not send
        elif key == "assembly":
            assert {k: v for k, v in value.items() if k not in client_body[key]} == {
                k: v for k, v in DEFAULTS_WRITTEN.items() if k not in client_body[key]
            }
            assert {k: v for k, v in value.items() if k in client_body[key]} == client_body[key]
        else:
            assert value == client_body[key]
    assert PrepareContextRequest.model_validate(client_body) == PrepareContextRequest.model_validate(rfc)


def test_a_real_server_answers_the_client_body_and_the_rfc_body_byte_for_byte_alike(
    http: httpx.Client, live_server: str
) -> None:
    """R: the client's omission of unset defaults changes nothing the server does: for omission,
    explicit defaults and empty sections, the body the client sends and the RFC's body get the
    same answer, byte for byte (and omission stays the legacy output, `{}` the text defaults,
    empty sections the empty result)."""
    scope_id = new_scope(http)
    for i in range(7):
        remember(http, scope_id, f"petrel memory {i}")
    for i in range(3):
        experience(http, scope_id, f"petrel case {i}", "act", "out", "learn")
    answers: dict[str, bytes] = {}
    for name, (kwargs, _) in CASES.items():
        recorder = Recorder(reply(200, READY))
        with recorder.client() as recording:
            recording.prepare_context(scope_id, "petrel", **kwargs)
        client_body = json.loads(recorder.last.content)
        by_client = http.post(
            "/v1/context/prepare", content=recorder.last.content, headers={"Content-Type": "application/json"}
        )
        by_rfc = http.post("/v1/context/prepare", json=rfc_body(client_body))
        assert (by_client.status_code, by_rfc.status_code) == (200, 200)
        assert by_client.content == by_rfc.content, name
        with PowerContextClient(live_server) as pc:  # and the client itself gets that answer
            assert pc.prepare_context(scope_id, "petrel", **kwargs).model_dump(
                mode="json", by_alias=True
            ) == (by_client.json())
        answers[name] = by_client.content
    assert answers["omitted"] == answers["omitted, max_bytes given"]
    assert b"BEGIN_POWERCONTEXT_PREPARED_CONTEXT_V1" in answers["omitted"]  # legacy
    defaults = {answers[n] for n in CASES if n.startswith("defaults")}
    assert len(defaults) == 1 and b"### Memory 6" in defaults.pop()
    empty = json.loads(answers["empty sections"])
    assert answers["empty sections"] == answers["empty sections as a model"] and empty["status"] == "empty"
