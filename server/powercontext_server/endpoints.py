"""One generic endpoint per operation of the generated table: authenticate, parse the parameters
and the body into their generated models, call the Runtime method named by the operationId, and
answer with its generated response model. Every failure becomes its error body in `errors.py`.
A streamed body (`application/x-ndjson`) reaches the method as an iterator of its lines, and a
streamed answer is sent chunk by chunk as the method's iterator yields it (`streams.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from powercontext_api.operations import Operation
from powercontext_runtime import (
    AccessPolicy,
    InvalidRequest,
    Principal,
    RetrievalUnavailable,
    ScopedContextApplication,
)

from .errors import JSON_MEDIA_TYPE, REQUEST_ID_SCOPE_KEY, UnsupportedMediaType, response_for
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
    operation: Operation[Any], application: ScopedContextApplication, policy: AccessPolicy, metrics: Metrics
) -> Endpoint:
    name = operation.operation_id
    public = operation.access == "public"

    async def handle(request: Request) -> Response:
        labels = request.scope.get(LABELS_SCOPE_KEY)
        if labels is not None:
            labels["operation"] = name
        try:
            # 401 comes before the body is read; 403 is the Runtime's, after the body is parsed.
            principal: Principal | None = None if public else policy.authenticate(bearer_token(request))
            models = await _request_models(operation, request)
            options = {} if principal is None else {"principal": principal}
            try:
                method = getattr(application, name)  # looked up per call: tests inject faults there
                result = await run_in_threadpool(method, *models, **options)
            except InvalidRequest as exc:
                raise relocated(operation, exc) from None
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


async def _request_models(operation: Operation[Any], request: Request) -> list[Any]:
    models: list[Any] = []
    parameters = parse_parameters(operation, request.path_params, request.query_params.multi_items())
    if parameters is not None:
        models.append(parameters)
    if operation.body_media_type == STREAM_MEDIA_TYPE:
        if not is_stream(request.headers.get("content-type", "")):
            raise UnsupportedMediaType(STREAM_MEDIA_TYPE)
        models.append(request_lines(request))
    elif operation.body_model is not None:
        raw = await request.body()
        content_type = request.headers.get("content-type")
        if content_type is None:
            if raw.strip():  # a body must say what it is
                raise UnsupportedMediaType()
        elif not is_json(content_type):
            raise UnsupportedMediaType()
        # An optional body that was left out reaches the Runtime as None, so the method's
        # signature is the same whatever the request holds.
        models.append(parse_body(operation, raw))
    return models
