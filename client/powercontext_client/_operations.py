"""Requests from the operation table, shared by the sync and the async client.

`request` turns the arguments a generated method was given into a `Call`: the operation of the
generated table, its path and query parameters and its JSON body, each validated by the operation's
generated models. The clients only send it (`httpx.Client` or `httpx.AsyncClient`, see `_exchange`)
and hand the answer to `read_response`, so both put the same bytes on the wire and raise the same
errors. What the client accepts beyond the wire (`_conveniences`) is turned into wire form here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel, ValidationError

from powercontext_api import operations as ops
from powercontext_api.client import UNSET
from powercontext_api.models import ErrorResponse, GetScopeParameters
from powercontext_api.operations import Operation

from ._errors import (
    REQUEST_ID_HEADER,
    ConflictError,
    PowerContextHTTPError,
    TransportError,
    UnexpectedResponseError,
    error_class_for,
)
from ._serialize import dump, dump_free, encode, parse, validate
from ._version import VERSION

ModelT = TypeVar("ModelT", bound=BaseModel)

SCOPE_EXISTS = "scope_exists"  # the error code of a create_scope whose id is taken

USER_AGENT = f"powercontext-client/{VERSION}"


def path_segment(value: str) -> str:
    """`value` as one path segment that every HTTP client sends as it is.

    `/`, `?` or `#` in a value cannot change the route; `:` and `@` are path-safe. A value that is
    exactly `.` or `..` (a valid Scope id) is a dot segment, which clients remove from a path before
    sending it (httpx among them, as RFC 3986 says), so it goes as `%2E` / `%2E%2E`, which is not
    one and which the server decodes back.
    """
    encoded = quote(value, safe=":@")
    return encoded.replace(".", "%2E") if encoded in (".", "..") else encoded


@dataclass(frozen=True)
class Call(Generic[ModelT]):
    """One request, ready to send: an operation of the generated table, its path parameters
    (percent-encoded into the path template), its query parameters and its JSON body.
    `repeatable` marks a write that is safe to send again (see `_retry`); `fallback` is sent
    instead when the answer is a 409 `scope_exists` (`create_scope(..., exist_ok=True)`)."""

    operation: Operation[ModelT]
    body: Mapping[str, Any] | None = None
    params: Mapping[str, str | int] | None = None
    path_params: Mapping[str, str | int] = field(default_factory=dict)
    repeatable: bool = False
    fallback: Call[Any] | None = None

    @property
    def method(self) -> str:
        return self.operation.method

    @property
    def path(self) -> str:
        return self.operation.path.format(
            **{name: path_segment(str(value)) for name, value in self.path_params.items()}
        )

    @property
    def response_model(self) -> type[ModelT]:
        return self.operation.response_model

    @property
    def content(self) -> bytes | None:
        return encode(self.body) if self.body is not None else None

    @property
    def headers(self) -> dict[str, str] | None:
        return {"Content-Type": "application/json"} if self.body is not None else None

    def transport_error(self, exc: httpx.RequestError) -> TransportError:
        return TransportError(f"{self.method} {self.path} failed: {exc}")


def client_headers(token: str | None) -> dict[str, str]:
    headers = {"Accept": "application/json", "User-Agent": USER_AGENT}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return headers


def read_response(call: Call[ModelT], response: httpx.Response) -> ModelT:
    """The answer's model, or the exception its status or body calls for. `response` must be read."""
    request_id = response.headers.get(REQUEST_ID_HEADER)
    if not response.is_success:
        raise _http_error(response, request_id)
    try:
        return parse(call.response_model, response.content)
    except ValidationError as exc:
        raise UnexpectedResponseError(
            f"{call.method} {call.path}: HTTP {response.status_code} body is not a valid "
            f"{call.response_model.__name__}: {exc.error_count()} error(s)",
            status=response.status_code,
            request_id=request_id,
        ) from exc


# Any operation -------------------------------------------------------------------------------------
def any_operation(
    operation: Operation[ModelT],
    body: BaseModel | Mapping[str, Any] | None,
    path: Mapping[str, str | int] | None,
    query: Mapping[str, str | int] | None,
) -> Call[ModelT]:
    """A call of any operation of the generated table, checked by its generated models first."""
    path_params: dict[str, str | int] = dict(path or {})
    if operation.parameters_model is not None:
        validate(operation.parameters_model, {**(query or {}), **path_params})
    payload: dict[str, Any] | None = None
    if operation.body_model is not None:
        given = dump(body) if isinstance(body, BaseModel) else dict(body or {})
        payload = dump(validate(operation.body_model, given))
    return Call(operation, body=payload, params=dict(query) if query else None, path_params=path_params)


# From a generated method ---------------------------------------------------------------------------
def request(operation: Operation[ModelT], arguments: Mapping[str, Any]) -> Call[ModelT]:
    """The call of a named method: `arguments` are its arguments by name, `None` meaning "not sent"."""
    given = dict(arguments)
    exist_ok = bool(given.pop("exist_ok", False))
    assembly = given.pop("assembly", UNSET)
    # Revise's `expires_at`: left out when not passed, while `None` (clear it) is sent as `null`.
    expires = given.pop("expires_at", None) if given.get("expires_at") in (UNSET, None) else UNSET
    if "entries" in given:  # remember_batch: `kind` is that of the entries given as plain text
        kind = given.pop("kind", None)
        given["entries"] = [_batch_entry(entry, kind) for entry in given["entries"]]
    # A model (an `ArtifactRef` from a response, say) goes in its wire form, so any model of the
    # right shape works, not only the request's own class.
    wire: dict[str, Any] = {
        name: dump(v) if isinstance(v, BaseModel) else v for name, v in given.items() if v is not None
    }
    where = {p.name: p.location for p in operation.parameters}
    path = {name: v for name, v in wire.items() if where.get(name) == "path"}
    query = {name: v for name, v in wire.items() if where.get(name) == "query"}
    body = {name: v for name, v in wire.items() if name not in where}
    call = any_operation(operation, body, path, query)
    if assembly is not UNSET and call.body is not None:
        # Added beside the generated model rather than through it: an explicit `None` must reach
        # the server as `null`, which the generated model would refuse to hold.
        call = replace(call, body={**call.body, "assembly": dump_free(assembly)})
    if expires is None and operation is ops.REVISE_MEMORY_ENTRY and call.body is not None:
        call = replace(call, body={**call.body, "expires_at": None})
    if exist_ok:  # a repeat is harmless: its 409 is answered by reading the Scope
        fallback = request(ops.GET_SCOPE, {"scope_id": given["scope_id"]})
        call = replace(call, repeatable=True, fallback=fallback)
    return call


def _batch_entry(entry: Any, kind: str | None) -> Any:
    if isinstance(entry, str):
        return {"text": entry} if kind is None else {"text": entry, "kind": kind}
    return entry


def scope_taken(call: Call[Any], exc: ConflictError) -> Call[Any] | None:
    """The call to send instead when a 409 is one `exist_ok` forgives (the id is taken)."""
    return call.fallback if exc.code == SCOPE_EXISTS else None


# Helpers ------------------------------------------------------------------------------------------
def _scope_id(scope_id: str) -> str:
    """A Scope id for a path, validated like a body field before it is percent-encoded."""
    valid: str = validate(GetScopeParameters, {"scope_id": scope_id}).scope_id
    return valid


def _http_error(response: httpx.Response, request_id: str | None) -> PowerContextHTTPError:
    status = response.status_code
    code: str | None = None
    message = response.reason_phrase or f"HTTP {status}"
    details: dict[str, Any] | None = None
    try:
        error = parse(ErrorResponse, response.content).error
    except ValidationError:
        # Not the contract's error body; keep whatever is recognisable.
        loose = _loose_error(response.content)
        if loose is not None:
            code, message, details = loose
    else:
        code, message, details = error.code, error.message, error.details
    return error_class_for(status)(
        status=status, code=code, message=message, details=details, request_id=request_id
    )


def _loose_error(content: bytes) -> tuple[str | None, str, dict[str, Any] | None] | None:
    try:
        data = json.loads(content)
    except ValueError:
        return None
    error = data.get("error") if isinstance(data, dict) else None
    if not isinstance(error, dict) or not isinstance(error.get("message"), str):
        return None
    code = error.get("code")
    details = error.get("details")
    return (
        code if isinstance(code, str) else None,
        error["message"],
        details if isinstance(details, dict) else None,
    )
