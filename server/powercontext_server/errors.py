"""The one place that turns failures into HTTP: typed Runtime exceptions and framework failures alike.

Every error body is `{"error": {"code", "message", "details"}}`. Messages are fixed strings, and
validation details carry only schema-side `type`/`loc`/`msg`, so no error body echoes request data.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect
from starlette.responses import Response

import powercontext_runtime as runtime
from powercontext_api.models import ErrorDetail, ErrorResponse

from .parsing import wire_errors

logger = logging.getLogger("powercontext.server")

REQUEST_ID_HEADER = "X-PowerContext-Request-ID"
REQUEST_ID_SCOPE_KEY = "powercontext.request_id"
JSON_MEDIA_TYPE = "application/json"

INVALID_REQUEST_MESSAGE = "The request violates the API contract."
INTERNAL_ERROR_MESSAGE = "The Server failed."
INVALID_EXPORT_MESSAGE = "The body is not a Scope export this server can import; nothing was imported."


@dataclass(frozen=True, slots=True)
class HttpError:
    """A failure as the wire sees it: status, body fields and any extra headers."""

    status: int
    code: str
    message: str
    details: Mapping[str, Any] | None = None
    headers: Mapping[str, str] = field(default_factory=dict)

    def body(self) -> bytes:
        details = None if self.details is None else dict(self.details)
        payload = ErrorResponse(error=ErrorDetail(code=self.code, message=self.message, details=details))
        return payload.model_dump_json().encode("utf-8")


INTERNAL_ERROR = HttpError(500, "internal_error", INTERNAL_ERROR_MESSAGE)
PAYLOAD_TOO_LARGE = HttpError(413, "payload_too_large", "The request body is too large.")

# Refusals at the HTTP edge (`http_edge.py`, `middleware.py`), mostly before any request exists.
MALFORMED_REQUEST = HttpError(400, "malformed_request", "The request is not valid HTTP/1.1.")
REQUEST_TIMEOUT = HttpError(408, "request_timeout", "The request was not received in time.")
URI_TOO_LONG = HttpError(414, "uri_too_long", "The request target is too long.")
HEADERS_TOO_LARGE = HttpError(431, "headers_too_large", "The request headers are too large.")
OVERLOADED = HttpError(
    503, "overloaded", "The server is at capacity; retry later.", headers={"Retry-After": "1"}
)

# Statuses the framework raises on its own (routing, media type, auth), with their wire codes.
_FRAMEWORK_ERRORS: dict[int, HttpError] = {
    401: HttpError(
        401, "unauthorized", "A valid credential is required.", headers={"WWW-Authenticate": "Bearer"}
    ),
    403: HttpError(403, "forbidden", "The Principal is not authorized for this operation."),
    404: HttpError(404, "not_found", "The requested resource was not found."),
    405: HttpError(405, "method_not_allowed", "The method is not allowed for the requested resource."),
    413: PAYLOAD_TOO_LARGE,
    415: HttpError(
        415,
        "unsupported_media_type",
        "The request Content-Type is not supported.",
        {"supported": [JSON_MEDIA_TYPE]},
    ),
}


def invalid_request(errors: Iterable[runtime.ErrorItem]) -> HttpError:
    details = {"errors": [{"type": e.type, "loc": list(e.loc), "msg": e.msg} for e in errors]}
    return HttpError(422, "invalid_request", INVALID_REQUEST_MESSAGE, details)


def invalid_export(exc: runtime.InvalidExport) -> HttpError:
    """422 `invalid_export`: the line at fault and, when the contract's schema for it refused it,
    its items as for a body (located at `body`, the line number, then the field)."""
    details: dict[str, Any] = {"line": exc.line}
    if exc.model is not None and exc.errors:
        where = functools.partial(_on_line, exc.line)
        items = wire_errors(exc.model, exc.errors, where)
        details["errors"] = [{"type": e.type, "loc": list(e.loc), "msg": e.msg} for e in items]
    return HttpError(422, "invalid_export", INVALID_EXPORT_MESSAGE, details)


def _on_line(line: int | None, loc: tuple[str | int, ...]) -> tuple[str | int, ...]:
    return ("body", line or 0, *loc)


def http_error_for(exc: BaseException) -> HttpError:
    """Map any exception to its wire form. Unknown exceptions are a 500 and carry nothing of `exc`."""
    if isinstance(exc, runtime.PowerContextError):
        return _runtime_error(exc)
    if isinstance(exc, UnsupportedMediaType):
        return dataclasses.replace(_FRAMEWORK_ERRORS[415], details={"supported": [exc.supported]})
    if isinstance(exc, HTTPException):
        return _framework_error(exc)
    if isinstance(exc, ClientDisconnect):
        return REQUEST_TIMEOUT  # the body stopped arriving (or the client left): the client's doing
    return INTERNAL_ERROR


def _runtime_error(exc: runtime.PowerContextError) -> HttpError:
    if isinstance(exc, runtime.Unauthenticated):
        return _FRAMEWORK_ERRORS[401]
    if isinstance(exc, runtime.Forbidden):
        return _FRAMEWORK_ERRORS[403]
    if isinstance(exc, runtime.InvalidRequest):
        return invalid_request(exc.errors)
    if isinstance(exc, runtime.ScopeNotFound):
        return HttpError(404, "scope_not_found", "The requested Scope was not found.")
    if isinstance(exc, runtime.EntryNotFound):
        return HttpError(404, "entry_not_found", "The cited entry was not found.")
    if isinstance(exc, runtime.EntryErased):
        return HttpError(410, "entry_erased", "The cited entry was erased.")
    if isinstance(exc, runtime.ScopeReferenced):
        return HttpError(
            409, "scope_referenced", "Another Scope references this Scope; remove the reference first."
        )
    if isinstance(exc, runtime.ScopeAlreadyExists):
        return HttpError(409, "scope_exists", "A Scope with this id already exists.")
    if isinstance(exc, runtime.InvalidExport):
        return invalid_export(exc)
    if isinstance(exc, runtime.RevisionConflict):
        return HttpError(409, "revision_conflict", exc.message)
    if isinstance(exc, runtime.RetrievalUnavailable):
        return HttpError(503, "retrieval_unavailable", "A configured retrieval or storage service failed.")
    return INTERNAL_ERROR


def _framework_error(exc: HTTPException) -> HttpError:
    status = exc.status_code
    known = _FRAMEWORK_ERRORS.get(status)
    if known is not None:
        if status == 405 and exc.headers and "Allow" in exc.headers:
            return HttpError(405, known.code, known.message, headers={"Allow": exc.headers["Allow"]})
        return known
    if 400 <= status < 500:
        return HttpError(status, "client_error", "The request cannot be served.")
    return INTERNAL_ERROR


class UnsupportedMediaType(Exception):
    """The request body is not declared as the operation's media type (RFC 9110 media type, any
    case, parameters allowed): JSON, or JSON Lines for a streamed body."""

    def __init__(self, supported: str = JSON_MEDIA_TYPE) -> None:
        super().__init__(supported)
        self.supported = supported


def error_response(error: HttpError) -> Response:
    return Response(error.body(), error.status, headers=dict(error.headers), media_type=JSON_MEDIA_TYPE)


def response_for(exc: BaseException, request_id: str, allowed_methods: Sequence[str] = ()) -> Response:
    """The wire answer to any failure, logged when it is the server's fault."""
    error = http_error_for(exc)
    if error.status == 405 and allowed_methods:
        error = dataclasses.replace(error, headers={"Allow": ", ".join(allowed_methods)})
    if isinstance(exc, runtime.RetrievalUnavailable):
        logger.warning("request %s: storage or retrieval unavailable", request_id, exc_info=exc)
    elif error.status >= 500:
        logger.error("request %s failed: %s", request_id, type(exc).__name__, exc_info=exc)
    return error_response(error)
