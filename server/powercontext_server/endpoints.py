"""One generic endpoint per operation of the generated table: authenticate, parse the parameters
and the body into their generated models, call the Runtime method named by the operationId, and
answer with its generated response model. Every failure becomes its error body in `errors.py`.
A streamed body (`application/x-ndjson`) reaches the method as an iterator of its lines, and a
streamed answer is sent chunk by chunk as the method's iterator yields it (`streams.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import anyio.to_thread
from anyio import CapacityLimiter
from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from powercontext_api.operations import Operation
from powercontext_runtime import (
    FULL_ACCESS,
    AccessPolicy,
    InvalidRequest,
    Principal,
    RetrievalUnavailable,
    ScopedContextApplication,
)

from .errors import JSON_MEDIA_TYPE, REQUEST_ID_SCOPE_KEY, UnsupportedMediaType, response_for
from .grants import require_grant, scope_named_in
from .metrics import LABELS_SCOPE_KEY, Metrics
from .parsing import parse_body, parse_parameters, relocated
from .streams import STREAM_MEDIA_TYPE, is_stream, request_lines, streamed, utf8_or_unsaid

Endpoint = Callable[[Request], Any]


def is_json(content_type: str) -> bool:
    """`application/json` or `application/<x>+json`, any case, with parameters (RFC 9110 §8.3);
    a declared charset must be UTF-8, the only one JSON has (RFC 8259 §8.1)."""
    media, _, parameters = content_type.partition(";")
    kind, _, subtype = media.strip().lower().partition("/")
    if kind != "application" or not (subtype == "json" or subtype.endswith("+json")):
        return False
    return utf8_or_unsaid(parameters)


def bearer_token(request: Request) -> str | None:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


def endpoint(
    operation: Operation[Any],
    application: ScopedContextApplication,
    policy: AccessPolicy,
    metrics: Metrics,
    limiter: CapacityLimiter | None = None,
) -> Endpoint:
    """The handler of `operation`; its Runtime calls run in a worker thread under `limiter`
    (None: anyio's default one, shared by every operation without its own; see `threads.py`)."""
    name = operation.operation_id
    public = operation.access == "public"

    async def handle(request: Request) -> Response:
        labels = request.scope.get(LABELS_SCOPE_KEY)
        if labels is not None:
            labels["operation"] = name
        try:
            # 401 comes before the body is read; 403 as soon as the Scope addressed is known.
            principal: Principal | None = None if public else policy.authenticate(bearer_token(request))
            raw = await _body(operation, request)
            query = request.query_params.multi_items()
            method = getattr(application, name)  # looked up per call: tests inject faults there
            # Parsing joins the call in the worker thread: a large body never holds the event loop.
            result = await anyio.to_thread.run_sync(
                _parse_and_call,
                operation,
                method,
                principal,
                request.path_params,
                query,
                raw,
                limiter=limiter,
            )
        except Exception as exc:  # every failure is answered with its error body
            if isinstance(exc, RetrievalUnavailable):
                metrics.observe_store_error()
            return response_for(exc, str(request.scope.get(REQUEST_ID_SCOPE_KEY, "-")))
        if operation.response_media_type == STREAM_MEDIA_TYPE:
            return StreamingResponse(streamed(result), operation.status, media_type=STREAM_MEDIA_TYPE)
        return Response(
            result.__pydantic_serializer__.to_json(result, by_alias=True),
            operation.status,
            media_type=JSON_MEDIA_TYPE,
        )

    return handle


async def _body(operation: Operation[Any], request: Request) -> bytes | Iterator[bytes] | None:
    """The raw body of an operation that takes one, once its media type is JSON, or the lines of a
    streamed one (read as the Runtime asks for them); else None."""
    if operation.body_media_type == STREAM_MEDIA_TYPE:
        if not is_stream(request.headers.get("content-type", "")):
            raise UnsupportedMediaType(STREAM_MEDIA_TYPE)
        return request_lines(request)
    if operation.body_model is None:
        return None
    raw = await request.body()
    content_type = request.headers.get("content-type")
    if content_type is None:
        if raw.strip():  # a body must say what it is
            raise UnsupportedMediaType()
    elif not is_json(content_type):
        raise UnsupportedMediaType()
    return raw


def _parse_and_call(
    operation: Operation[Any],
    method: Callable[..., BaseModel],
    principal: Principal | None,
    path: Mapping[str, str],
    query: Iterable[tuple[str, str]],
    raw: bytes | Iterator[bytes] | None,
) -> Any:
    models: list[Any] = []
    parameters = parse_parameters(operation, path, query)
    if parameters is not None:
        models.append(parameters)
    # The grant is checked as soon as the Scope is known, before the body is parsed: from the path,
    # else from the body's `scope_id` alone (a cheap look that skips everything else). With access
    # disabled every request has every grant, and pays nothing for the look.
    addressed = getattr(parameters, "scope_id", None)
    if (
        isinstance(raw, bytes)
        and addressed is None
        and principal is not None
        and principal is not FULL_ACCESS
    ):
        addressed = scope_named_in(raw)
    require_grant(operation, principal, addressed)
    if raw is not None and not isinstance(raw, bytes):
        models.append(raw)  # a streamed body's lines, read as the method consumes them
    elif raw is not None:
        # An optional body that was left out reaches the Runtime as None, so the method's
        # signature is the same whatever the request holds.
        models.append(parse_body(operation, raw))
    options = {} if principal is None else {"principal": principal}
    try:
        return method(*models, **options)
    except InvalidRequest as exc:
        raise relocated(operation, exc) from None
