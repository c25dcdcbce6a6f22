"""The client's exception hierarchy.

PowerContextError
├── InvalidArgumentError         an argument breaks the contract; nothing was sent (also a ValueError)
├── TransportError               no HTTP response: connection refused, timeout, broken stream
├── UnexpectedResponseError      a success status whose body breaks the contract
├── InvalidPreparedContextError  a prepare answer fails `validate_prepared_context`
└── PowerContextHTTPError        the server answered with a non-success status
    ├── UnauthorizedError        401
    ├── ForbiddenError           403
    ├── NotFoundError            404
    ├── ConflictError            409
    ├── InvalidRequestError      422
    └── ServerError              5xx
        └── UnavailableError     503
"""

from __future__ import annotations

from typing import Any

REQUEST_ID_HEADER = "X-PowerContext-Request-ID"


class PowerContextError(Exception):
    """Base class of every error this client raises on purpose."""


class InvalidArgumentError(PowerContextError, ValueError):
    """An argument breaks the contract's request schema, so the request was not sent.

    The message lists the first problems as `field: problem`; the `pydantic.ValidationError` with
    all of them is chained as `__cause__`. It is a `ValueError` too, as a wrong argument is.
    """


class TransportError(PowerContextError):
    """The request got no HTTP response (connection failure, timeout, protocol error).

    The underlying `httpx` exception is chained as `__cause__`.
    """


class UnexpectedResponseError(PowerContextError):
    """The server answered with a success status, but the body does not match the contract."""

    def __init__(self, message: str, *, status: int, request_id: str | None) -> None:
        super().__init__(message)
        self.status = status
        self.request_id = request_id


class InvalidPreparedContextError(PowerContextError):
    """A prepare answer failed `validate_prepared_context`; the message names the failed check.

    A host treats it like any other failure: no context, the turn goes on.
    """


class PowerContextHTTPError(PowerContextError):
    """The server answered with an error status.

    `code`, `message` and `details` come from the `{"error": {...}}` body. When the body is not in
    that format (a proxy's HTML page, say), `code` and `details` are `None` and `message` is the
    HTTP reason phrase.
    """

    def __init__(
        self,
        *,
        status: int,
        code: str | None,
        message: str,
        details: dict[str, Any] | None,
        request_id: str | None,
    ) -> None:
        super().__init__(f"HTTP {status} {code or 'error'}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.details = details
        self.request_id = request_id


class UnauthorizedError(PowerContextHTTPError):
    """401 `unauthorized`: the credential is missing or not valid."""


class ForbiddenError(PowerContextHTTPError):
    """403 `forbidden`: the Principal may not perform this operation on every Scope it needs."""


class NotFoundError(PowerContextHTTPError):
    """404: the Scope (`scope_not_found`) or the cited item does not exist."""


class ConflictError(PowerContextHTTPError):
    """409: a stale `expected_version`/`expected_revision`, or an id that is taken."""


class InvalidRequestError(PowerContextHTTPError):
    """422 `invalid_request`: `details["errors"]` lists each problem as `type`/`loc`/`msg`."""


class ServerError(PowerContextHTTPError):
    """Any 5xx answer."""


class UnavailableError(ServerError):
    """503 `retrieval_unavailable`: a configured storage or retrieval service failed."""


_BY_STATUS: dict[int, type[PowerContextHTTPError]] = {
    401: UnauthorizedError,
    403: ForbiddenError,
    404: NotFoundError,
    409: ConflictError,
    422: InvalidRequestError,
    503: UnavailableError,
}


def error_class_for(status: int) -> type[PowerContextHTTPError]:
    """The most specific exception class for an error status."""
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    if 500 <= status <= 599:
        return ServerError
    return PowerContextHTTPError
