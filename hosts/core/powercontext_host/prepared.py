"""One `POST /v1/context/prepare` and the strict check of its answer, for every host.

`fetch_prepared` returns the server's `content` unchanged ("" for an empty answer) or raises
`PrepareFailure`, whose `outcome` names what went wrong in a word a diagnostic can print and whose
message is log-safe: never the token, the query or a response body.
"""

from __future__ import annotations

import json
from typing import Any

from . import _contract
from .transport import DeadlinePassed, Unreachable, exchange, failure_text, post_request, within

RESPONSE_KEYS = frozenset(_contract.PREPARED_KEYS)
MAX_RESPONSE_BYTES = 1 << 20  # content <= 32 KiB; JSON escaping can at most multiply it by 6
MIN_PREPARE_SECONDS = 0.05  # less than this left of the budget: do not start the request


class PrepareFailure(Exception):
    """The context could not be used; the turn goes on without it."""

    def __init__(self, message: str, outcome: str = "invalid-answer") -> None:
        super().__init__(message)
        self.outcome = outcome


def request_body(scope_id: str, query: str, max_bytes: int, assembly_json: str | None) -> dict[str, Any]:
    """The request: legacy mode has no `assembly` key at all; section order is kept."""
    body: dict[str, Any] = {
        "scope_id": scope_id,
        "query": query[: _contract.MAX_QUERY_CHARS],
        "max_bytes": max_bytes,
    }
    if assembly_json is not None:
        body["assembly"] = json.loads(assembly_json)
    return body


def fetch_prepared(base_url: str, token: str | None, body: dict[str, Any], seconds: float) -> str:
    """The validated `content` of a prepare of `body` ("" when empty), within `seconds` in total."""
    if seconds < MIN_PREPARE_SECONDS:
        raise PrepareFailure(f"timed out: no time left of {seconds:g} s for prepare", "timeout")
    try:
        raw = within(seconds, lambda: _post(base_url, token, body, seconds), "powercontext-prepare")
    except DeadlinePassed:
        raise PrepareFailure(f"timed out after {seconds:g} s", "timeout") from None
    try:
        payload = json.loads(raw)
    except ValueError:
        raise PrepareFailure("response is not valid JSON") from None
    return validate_prepared(payload, int(body["max_bytes"]))


def validate_prepared(payload: object, max_bytes: int) -> str:
    """Check the four-key contract and the host budget; return `content` unchanged or ""."""
    if not isinstance(payload, dict) or set(payload) != RESPONSE_KEYS:
        raise PrepareFailure("response does not have exactly schema, status, content, content_bytes")
    if payload["schema"] != _contract.PREPARED_SCHEMA:
        raise PrepareFailure(f"response schema is not {_contract.PREPARED_SCHEMA}")
    size = payload["content_bytes"]
    if not isinstance(size, int) or isinstance(size, bool):
        raise PrepareFailure("response content_bytes is not an integer")
    status, content = payload["status"], payload["content"]
    if status == "empty":
        if content is not None or size != 0:
            raise PrepareFailure("empty response must have content null and content_bytes 0")
        return ""
    if status != "ready":
        raise PrepareFailure("response status is neither ready nor empty")
    if not isinstance(content, str) or not content.strip():
        raise PrepareFailure("ready response must carry non-blank text")
    if size != len(content.encode("utf-8")):
        raise PrepareFailure("response content_bytes differs from the UTF-8 length of content")
    if size > max_bytes:
        raise PrepareFailure(
            f"response content_bytes {size} exceeds max_bytes {max_bytes}", "oversized-answer"
        )
    return content


def _post(base_url: str, token: str | None, body: dict[str, Any], seconds: float) -> bytes:
    request = post_request(base_url, _contract.PREPARE_PATH, token, body)
    try:
        status, data = exchange(request, seconds, MAX_RESPONSE_BYTES)
    except Unreachable as exc:
        raise PrepareFailure(
            str(exc), "timeout" if "timed out" in str(exc) else "server-unreachable"
        ) from None
    if status != 200:
        raise PrepareFailure(failure_text(status, data), _status_outcome(status))
    if len(data) > MAX_RESPONSE_BYTES:
        raise PrepareFailure("response is too large", "oversized-answer")
    return data


def _status_outcome(status: int) -> str:
    return "http-5xx" if status >= 500 else f"http-{status}"
