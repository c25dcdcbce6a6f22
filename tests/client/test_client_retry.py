"""Retries (`_retry`): which calls are sent again after a failed connection or a 503, and when.

The waits are recorded instead of slept: each client module's `time` (or `asyncio`) is replaced by
a stand-in whose `sleep` notes the seconds. The policy's own arithmetic is tested directly.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from types import SimpleNamespace
from typing import Any

import httpx
import pytest

from powercontext_api import operations
from powercontext_api.operations import OPERATIONS
from powercontext_client import (
    AsyncPowerContextClient,
    PowerContextClient,
    TransportError,
    UnavailableError,
)
from powercontext_client import _operations as ops
from powercontext_client._operations import Call
from powercontext_client._retry import Attempts, RetryPolicy, repeatable

from .client_recorder import BASE_URL, ENTRY, READY, SCOPE

UNAVAILABLE = {"error": {"code": "retrieval_unavailable", "message": "m", "details": None}}
# The writes a lost answer could have committed: sent once, whatever happens.
SENT_ONCE = {
    "create_scope",
    "remember",
    "remember_batch",
    "revise_memory_entry",
    "retire_memory_entry",
    "erase_memory_entry",
    "propose_experience",
    "propose_profile",
    "approve_candidate",
    "reject_candidate",
    "put_topic",
    "import_scope",
}


class Script:
    """A transport double answering each request with the next step: a status with a body and
    headers, or an exception class to raise."""

    def __init__(self, *steps: tuple[int, Any, dict[str, str]] | type[httpx.RequestError]) -> None:
        self.steps: Iterator[Any] = iter(steps)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        request.read()
        self.requests.append(request)
        step = next(self.steps)
        if isinstance(step, type):
            raise step("scripted", request=request)
        status, body, headers = step
        return httpx.Response(status, json=body, headers=headers)

    def client(self, **kwargs: Any) -> PowerContextClient:
        return PowerContextClient(BASE_URL, transport=httpx.MockTransport(self), **kwargs)

    def async_client(self, **kwargs: Any) -> AsyncPowerContextClient:
        return AsyncPowerContextClient(BASE_URL, transport=httpx.MockTransport(self), **kwargs)


def unavailable(headers: dict[str, str] | None = None) -> tuple[int, Any, dict[str, str]]:
    return (503, UNAVAILABLE, headers or {})


def ok(body: Any) -> tuple[int, Any, dict[str, str]]:
    return (200, body, {})


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The seconds each client waited between attempts, in order; nothing is slept."""
    waited: list[float] = []

    async def async_sleep(seconds: float) -> None:
        waited.append(seconds)

    monkeypatch.setattr("powercontext_client._client.time", SimpleNamespace(sleep=waited.append))
    monkeypatch.setattr("powercontext_client._async_client.asyncio", SimpleNamespace(sleep=async_sleep))
    return waited


# Which calls are repeated ---------------------------------------------------------------------------


def test_reads_put_and_delete_are_repeatable_and_every_other_write_is_sent_once() -> None:
    for operation in OPERATIONS:
        expected = operation.operation_id not in SENT_ONCE
        assert repeatable(Call(operation)) is expected, operation.operation_id
        if expected:
            reads = ("public", "scope.read", "scope.export")
            assert operation.access in reads or operation.method in ("PUT", "DELETE")


def test_create_scope_with_exist_ok_is_repeatable() -> None:
    assert not repeatable(ops.request(operations.CREATE_SCOPE, {"scope_id": "project:demo"}))
    assert repeatable(ops.request(operations.CREATE_SCOPE, {"scope_id": "project:demo", "exist_ok": True}))


# Sync client -----------------------------------------------------------------------------------------


def test_a_read_is_sent_again_after_503_with_doubling_waits(waits: list[float]) -> None:
    script = Script(unavailable(), unavailable(), ok(READY))
    with script.client() as pc:
        prepared = pc.prepare_context("project:demo", "q")
    assert prepared.content == "context"
    assert len(script.requests) == 3
    assert {r.content for r in script.requests} == {script.requests[0].content}
    assert waits == [0.2, 0.4]


def test_retry_after_is_honoured_up_to_the_cap(waits: list[float]) -> None:
    script = Script(unavailable({"Retry-After": "2"}), unavailable({"Retry-After": "120"}), ok(SCOPE))
    with script.client(max_retry_delay=10.0) as pc:
        pc.get_scope("project:demo")
    assert waits == [2.0, 10.0]


def test_the_last_503_stands_after_the_retries_run_out(waits: list[float]) -> None:
    script = Script(unavailable(), unavailable(), unavailable())
    with script.client(retries=2, backoff=1.0) as pc, pytest.raises(UnavailableError):
        pc.search_memory("project:demo", "q")
    assert len(script.requests) == 3
    assert waits == [1.0, 2.0]


def test_retries_0_sends_once(waits: list[float]) -> None:
    script = Script(unavailable())
    with script.client(retries=0) as pc, pytest.raises(UnavailableError):
        pc.health_ready()
    assert len(script.requests) == 1
    assert waits == []


def test_a_read_is_sent_again_after_a_failed_connection(waits: list[float]) -> None:
    script = Script(httpx.ConnectError, httpx.RemoteProtocolError, ok({"status": "ok"}))
    with script.client() as pc:
        assert pc.health_live().status == "ok"
    assert len(script.requests) == 3


def test_a_read_timeout_is_not_repeated(waits: list[float]) -> None:
    script = Script(httpx.ReadTimeout)
    with script.client() as pc, pytest.raises(TransportError) as caught:
        pc.prepare_context("project:demo", "q")
    assert isinstance(caught.value.__cause__, httpx.ReadTimeout)
    assert len(script.requests) == 1


@pytest.mark.parametrize(
    "failure", [unavailable(), httpx.ConnectError, httpx.ReadError], ids=["503", "connect", "read"]
)
def test_remember_is_never_sent_again(waits: list[float], failure: Any) -> None:
    script = Script(failure, ok(ENTRY))
    with script.client() as pc, pytest.raises((UnavailableError, TransportError)):
        pc.remember("project:demo", "text")
    assert len(script.requests) == 1
    assert waits == []


def test_update_and_delete_scope_are_sent_again(waits: list[float]) -> None:
    script = Script(unavailable(), ok(SCOPE), httpx.ConnectError, ok({"scope_id": "project:demo"}))
    with script.client() as pc:
        pc.update_scope("project:demo", expected_version=1, title="T")
        pc.delete_scope("project:demo")
    assert [r.method for r in script.requests] == ["PUT", "PUT", "DELETE", "DELETE"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"retries": -1}, "retries must be 0 or more"),
        ({"backoff": -0.1}, "backoff must be"),
        ({"max_retry_delay": float("inf")}, "max_delay must be"),
    ],
)
def test_invalid_retry_settings_are_refused(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        PowerContextClient(BASE_URL, **kwargs)


# Async client ----------------------------------------------------------------------------------------


async def test_async_client_repeats_reads_and_never_remember(waits: list[float]) -> None:
    script = Script(unavailable({"Retry-After": "1"}), ok(READY), unavailable())
    async with script.async_client() as pc:
        prepared = await pc.prepare_context("project:demo", "q")
        assert prepared.status == "ready"
        with pytest.raises(UnavailableError):
            await pc.remember("project:demo", "text")
    assert [r.url.path for r in script.requests] == [
        "/v1/context/prepare",
        "/v1/context/prepare",
        "/v1/memory/remember",
    ]
    assert waits == [1.0]


# The policy's arithmetic ----------------------------------------------------------------------------


def response(headers: dict[str, str]) -> httpx.Response:
    return httpx.Response(503, headers=headers)


def test_delay_doubles_from_backoff_and_stops_at_max_delay() -> None:
    policy = RetryPolicy(retries=9, backoff=0.5, max_delay=3.0)
    assert [policy.delay(n) for n in range(5)] == [0.5, 1.0, 2.0, 3.0, 3.0]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("3", 3.0),
        ("0", 0.0),
        ("600", 5.0),  # capped
        ("soon", 0.2),  # unreadable: the backoff
        ("-1", 0.2),
    ],
)
def test_retry_after_seconds(value: str, expected: float) -> None:
    assert RetryPolicy().delay(0, response({"Retry-After": value})) == expected


def test_retry_after_as_an_http_date() -> None:
    policy = RetryPolicy(max_delay=60.0)
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    assert 28.0 <= policy.delay(0, response({"Retry-After": later})) <= 30.0
    past = format_datetime(datetime.now(UTC) - timedelta(seconds=30), usegmt=True)
    assert policy.delay(0, response({"Retry-After": past})) == 0.0


def test_attempts_count_retries_per_call() -> None:
    attempts = Attempts(RetryPolicy(retries=2), Call(operations.SEARCH_MEMORY))
    failure = httpx.ConnectError("x")
    assert [attempts.after_error(failure) for _ in range(3)] == [0.2, 0.4, None]
    assert Attempts(RetryPolicy(), Call(operations.SEARCH_MEMORY)).after_response(httpx.Response(502)) is None
