"""One-line messages for the client's failures, shared by the `powercontext` command and its MCP server.

Each names what a person (or a model) needs to act: the HTTP status, error code and message with the
first problems the server listed, the field an argument failed on, or why the server was not reached.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx
from pydantic import ValidationError

from ._errors import PowerContextHTTPError, TransportError


def http_message(exc: PowerContextHTTPError) -> str:
    """`HTTP 404 scope_not_found: ...`, the first three problems of a 422 and the request id."""
    message = f"HTTP {exc.status} {exc.code or 'error'}: {exc.message}"
    errors = (exc.details or {}).get("errors")
    if isinstance(errors, list) and errors:
        message += " " + "; ".join(_error_item(e) for e in errors[:3] if isinstance(e, dict))
        if len(errors) > 3:
            message += f"; and {len(errors) - 3} more"
    if exc.request_id:
        message += f" (request id {exc.request_id})"
    return message


def _error_item(error: Mapping[str, Any]) -> str:
    loc = ".".join(str(part) for part in error.get("loc") or [])
    return f"[{loc}] {error.get('msg', '')}" if loc else str(error.get("msg", ""))


def transport_message(exc: TransportError, url: str, timeout: float) -> str:
    """Why no HTTP answer came from the server at `url`."""
    cause = exc.__cause__
    if isinstance(cause, httpx.TimeoutException):
        return f"the server at {url} did not answer within {timeout:g} s"
    if isinstance(cause, httpx.ConnectError):
        return f"the server is not reachable at {url} ({cause})"
    return f"the request to {url} failed: {cause or exc}"


def _pattern_message(pattern: str) -> str:
    """Say what the contract's two text patterns mean instead of quoting them."""
    if pattern.startswith("[^\\t"):
        return "must not be blank"
    if pattern.startswith("^[^/%"):  # ScopeId
        return "must not be blank or hold /, % or control characters"
    return f"must match {pattern}"


def validation_summary(exc: ValidationError) -> str:
    """The first three problems of a request model's validation, each as `field: problem`."""
    parts = []
    for error in exc.errors()[:3]:
        loc = ".".join(str(part) for part in error["loc"] if part != "root")
        msg = error["msg"]
        if error["type"] == "string_pattern_mismatch":
            msg = _pattern_message(str((error.get("ctx") or {}).get("pattern", "")))
        parts.append(f"{loc}: {msg}" if loc else msg)
    return "; ".join(parts)
