"""How failures surface: error bodies map to one exception class each; no response is a TransportError."""

from __future__ import annotations

import socket

import httpx
import pytest

import powercontext_client as client
from powercontext_client import PowerContextClient

from .client_recorder import READY, Recorder, reply

REQUEST_ID = "req-0123"


def error_body(code: str, message: str, details: object = None) -> dict[str, object]:
    return {"error": {"code": code, "message": message, "details": details}}


@pytest.mark.parametrize(
    ("status", "code", "message", "exception"),
    [
        (401, "unauthorized", "A valid credential is required.", client.UnauthorizedError),
        (403, "forbidden", "The Principal is not authorized for this operation.", client.ForbiddenError),
        (404, "scope_not_found", "The requested Scope was not found.", client.NotFoundError),
        (409, "revision_conflict", "The expected revision or version is stale.", client.ConflictError),
        (503, "retrieval_unavailable", "A configured retrieval service failed.", client.UnavailableError),
        (500, "internal_error", "The Server failed.", client.ServerError),
    ],
)
def test_error_status_maps_to_its_exception_with_code_message_and_request_id(
    status: int, code: str, message: str, exception: type[client.PowerContextHTTPError]
) -> None:
    recorder = Recorder(reply(status, error_body(code, message), {"X-PowerContext-Request-ID": REQUEST_ID}))
    with recorder.client() as pc, pytest.raises(exception) as caught:
        pc.prepare_context("project:demo", "q")
    error = caught.value
    assert type(error) is exception
    assert (error.status, error.code, error.message, error.details, error.request_id) == (
        status,
        code,
        message,
        None,
        REQUEST_ID,
    )


def test_invalid_request_carries_the_validation_details() -> None:
    details = {"errors": [{"type": "missing", "loc": ["body", "query"], "msg": "Field required"}]}
    recorder = Recorder(
        reply(
            422,
            error_body("invalid_request", "The request violates the API contract.", details),
            {"X-PowerContext-Request-ID": REQUEST_ID},
        )
    )
    with recorder.client() as pc, pytest.raises(client.InvalidRequestError) as caught:
        pc.prepare_context("project:demo", "q", assembly=None)
    assert caught.value.status == 422
    assert caught.value.code == "invalid_request"
    assert caught.value.message == "The request violates the API contract."
    assert caught.value.details == details
    assert caught.value.request_id == REQUEST_ID


def test_unavailable_is_a_server_error_and_every_http_error_is_a_powercontext_error() -> None:
    assert issubclass(client.UnavailableError, client.ServerError)
    for cls in (
        client.UnauthorizedError,
        client.ForbiddenError,
        client.NotFoundError,
        client.ConflictError,
        client.InvalidRequestError,
    ):
        assert issubclass(cls, client.PowerContextHTTPError)
    assert issubclass(client.PowerContextHTTPError, client.PowerContextError)
    assert issubclass(client.TransportError, client.PowerContextError)
    assert issubclass(client.UnexpectedResponseError, client.PowerContextError)


def test_other_5xx_statuses_are_server_errors() -> None:
    recorder = Recorder(reply(502, error_body("bad_gateway", "upstream")))
    with recorder.client() as pc, pytest.raises(client.ServerError) as caught:
        pc.health_live()
    assert caught.value.status == 502
    assert caught.value.request_id is None


def test_unmapped_status_raises_the_base_http_error() -> None:
    recorder = Recorder(reply(413, error_body("payload_too_large", "The request body is too large.")))
    with recorder.client() as pc, pytest.raises(client.PowerContextHTTPError) as caught:
        pc.remember("project:demo", "text")
    assert type(caught.value) is client.PowerContextHTTPError
    assert caught.value.code == "payload_too_large"


def test_error_without_a_json_body_keeps_status_and_reason_phrase() -> None:
    recorder = Recorder(lambda _r: httpx.Response(502, content=b"<html>Bad Gateway</html>"))
    with recorder.client() as pc, pytest.raises(client.ServerError) as caught:
        pc.health_ready()
    assert (caught.value.status, caught.value.code, caught.value.message, caught.value.details) == (
        502,
        None,
        "Bad Gateway",
        None,
    )


def test_error_body_with_extra_keys_still_yields_code_and_message() -> None:
    body = {"error": {"code": "scope_not_found", "message": "gone", "details": None, "extra": 1}}
    recorder = Recorder(reply(404, body))
    with recorder.client() as pc, pytest.raises(client.NotFoundError) as caught:
        pc.get_scope("project:demo")
    assert (caught.value.code, caught.value.message) == ("scope_not_found", "gone")


def test_success_body_that_breaks_the_contract_raises_unexpected_response() -> None:
    recorder = Recorder(
        reply(200, {**READY, "items": []}, {"X-PowerContext-Request-ID": REQUEST_ID}),
    )
    with recorder.client() as pc, pytest.raises(client.UnexpectedResponseError) as caught:
        pc.prepare_context("project:demo", "q")
    assert caught.value.status == 200
    assert caught.value.request_id == REQUEST_ID


def test_connection_refused_raises_transport_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # Nothing listens on the port any more.
    with (
        PowerContextClient(f"http://127.0.0.1:{port}", timeout=2.0) as pc,
        pytest.raises(client.TransportError) as caught,
    ):
        pc.health_live()
    assert isinstance(caught.value.__cause__, httpx.ConnectError)


def test_timeout_raises_transport_error() -> None:
    def time_out(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    with (
        PowerContextClient("http://h.test", transport=httpx.MockTransport(time_out)) as pc,
        pytest.raises(client.TransportError) as caught,
    ):
        pc.prepare_context("project:demo", "q")
    assert isinstance(caught.value.__cause__, httpx.TimeoutException)
