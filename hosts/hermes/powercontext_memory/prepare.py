"""Hermes's prepare: the host core's request and strict check, with this provider's settings.

`fetch_prepared` either returns the server's `content` unchanged (or "" for an empty result) or
raises `PrepareFailure` whose message is safe to log: it never holds the token, the query or a
response body.
"""

from __future__ import annotations

from typing import Any

from ._core.prepared import MIN_PREPARE_SECONDS, PrepareFailure, validate_prepared
from ._core.prepared import fetch_prepared as _fetch
from ._core.prepared import request_body as _request_body
from .config import Settings

__all__ = ["PrepareFailure", "fetch_prepared", "request_body", "validate_prepared"]


def request_body(settings: Settings, query: str) -> dict[str, Any]:
    """The request: legacy mode has no `assembly` key at all; section order is kept."""
    return _request_body(settings.scope_id, query, settings.max_bytes, settings.assembly_json)


def fetch_prepared(settings: Settings, query: str, timeout: float | None = None) -> str:
    """The validated `content` ("" when empty), within `timeout` seconds in total.

    `timeout` defaults to `settings.timeout`; the provider passes what is left of that budget
    after a capabilities check on the same turn.
    """
    seconds = settings.timeout if timeout is None else timeout
    if seconds < MIN_PREPARE_SECONDS:
        raise PrepareFailure(f"timed out: no time left of {settings.timeout:g} s for prepare", "timeout")
    return _fetch(settings.base_url, settings.token, request_body(settings, query), seconds)
