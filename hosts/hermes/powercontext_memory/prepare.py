"""One `POST /v1/context/prepare` call and the strict check of its answer.

`fetch_prepared` either returns the server's `content` unchanged (or "" for an empty result) or
raises `PrepareFailure` whose message is safe to log: it never holds the token, the query or a
response body.
"""

from __future__ import annotations

import json
from typing import Any

from .config import Settings
from .transport import DeadlinePassed, Unreachable, exchange, failure_text, post_request, within

SCHEMA = "powercontext.prepared-context.v1"
RESPONSE_KEYS = frozenset({"schema", "status", "content", "content_bytes"})
MAX_QUERY_CHARS = 8192
MAX_RESPONSE_BYTES = 1 << 20  # content <= 32 KiB; JSON escaping can at most multiply it by 6
MIN_PREPARE_SECONDS = 0.05  # less than this left of the turn's budget: do not start the request


class PrepareFailure(Exception):
    """The context could not be used; the turn goes on without it."""


def request_body(settings: Settings, query: str) -> dict[str, Any]:
    """The request: legacy mode has no `assembly` key at all; section order is kept."""
    body: dict[str, Any] = {
        "scope_id": settings.scope_id,
        "query": query[:MAX_QUERY_CHARS],
        "max_bytes": settings.max_bytes,
    }
    if settings.assembly_json is not None:
        body["assembly"] = json.loads(settings.assembly_json)
    return body


def fetch_prepared(settings: Settings, query: str, timeout: float | None = None) -> str:
    """The validated `content` ("" when empty), within `timeout` seconds in total.

    `timeout` defaults to `settings.timeout`; the provider passes what is left of that budget
    after a capabilities check on the same turn.
    """
    seconds = settings.timeout if timeout is None else timeout
    if seconds < MIN_PREPARE_SECONDS:
        raise PrepareFailure(f"timed out: no time left of {settings.timeout:g} s for prepare")
    body = request_body(settings, query)
    try:
        raw = within(seconds, lambda: _post(settings, body, seconds), "powercontext-prepare")
    except DeadlinePassed:
        raise PrepareFailure(f"timed out after {seconds:g} s") from None
    try:
        payload = json.loads(raw)
    except ValueError:
        raise PrepareFailure("response is not valid JSON") from None
    return validate_prepared(payload, settings.max_bytes)


def validate_prepared(payload: object, max_bytes: int) -> str:
    """Check the four-key contract and the host budget; return `content` unchanged or ""."""
    if not isinstance(payload, dict) or set(payload) != RESPONSE_KEYS:
        raise PrepareFailure("response does not have exactly schema, status, content, content_bytes")
    if payload["schema"] != SCHEMA:
        raise PrepareFailure("response schema is not powercontext.prepared-context.v1")
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
        raise PrepareFailure(f"response content_bytes {size} exceeds max_bytes {max_bytes}")
    return content


def _post(settings: Settings, body: dict[str, Any], seconds: float) -> bytes:
    request = post_request(settings.base_url, "/v1/context/prepare", settings.token, body)
    try:
        status, data = exchange(request, seconds, MAX_RESPONSE_BYTES)
    except Unreachable as exc:
        raise PrepareFailure(str(exc)) from None
    if status != 200:
        raise PrepareFailure(failure_text(status, data))
    if len(data) > MAX_RESPONSE_BYTES:
        raise PrepareFailure("response is too large")
    return data
