"""Moving a Scope over the API, shared by the sync and the async client: the export's answer is
written out as it arrives, and an import's body is sent as it is read, so neither client ever holds
a whole Scope.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any, BinaryIO, TypeAlias

import httpx
from pydantic import BaseModel

from powercontext_api import operations
from powercontext_api.models import ScopeImport

from ._errors import InvalidArgumentError
from ._operations import Call, _scope_id, read_response

STREAM_MEDIA_TYPE = "application/x-ndjson"
EXPORT_HEADERS = {"Accept": f"{STREAM_MEDIA_TYPE}, application/json"}
IMPORT_HEADERS = {"Content-Type": STREAM_MEDIA_TYPE}
# Bytes read from a file per chunk of the body; and the most read to find the header's Scope id.
READ_BYTES = 64 << 10
MAX_HEADER_BYTES = 1 << 20

Source: TypeAlias = bytes | BinaryIO | Iterable[bytes]
"""An export to import: its bytes, a binary file open for reading, or an iterable of byte chunks."""

Sink: TypeAlias = BinaryIO | Callable[[bytes], object]
"""Where an export goes: a binary file open for writing, or a callable given each chunk."""


def export_call(scope_id: str) -> Call[BaseModel]:
    return Call(operations.EXPORT_SCOPE, path_params={"scope_id": _scope_id(scope_id)})


def import_call(scope_id: str) -> Call[ScopeImport]:
    return Call(operations.IMPORT_SCOPE, path_params={"scope_id": _scope_id(scope_id)})


class Writer:
    """Writes each chunk of an export to the sink, counting the bytes."""

    def __init__(self, out: Sink) -> None:
        self._write: Callable[[bytes], object] = out if callable(out) else out.write
        self.written = 0

    def __call__(self, chunk: bytes) -> None:
        self._write(chunk)
        self.written += len(chunk)


def import_request(
    scope_id: str | None, source: Source, timeout: httpx.Timeout
) -> tuple[Call[ScopeImport], Iterator[bytes], dict[str, Any]]:
    """The import's call, its body's chunks, and the rest of the request's arguments."""
    target, body = target_and_body(scope_id, source)
    call = import_call(target)
    arguments = {
        "method": call.method,
        "url": call.path,
        "headers": IMPORT_HEADERS,
        "timeout": patient(timeout),
    }
    return call, body, arguments


def raise_unless_success(
    call: Call[BaseModel], response: httpx.Response, read: Callable[[], object] = lambda: None
) -> None:
    """The error a failed export's answer calls for (`read` reads its body first)."""
    if not response.is_success:
        read()
        read_response(call, response)


def patient(timeout: httpx.Timeout) -> httpx.Timeout:
    """The client's timeouts, but no limit on waiting for the answer: an import answers only once
    the whole Scope is written and indexed."""
    return httpx.Timeout(connect=timeout.connect, read=None, write=timeout.write, pool=timeout.pool)


def chunks(source: Source) -> Iterator[bytes]:
    if isinstance(source, bytes):
        yield source
    elif hasattr(source, "read"):
        while chunk := source.read(READ_BYTES):
            yield chunk
    else:
        yield from source


def target_and_body(scope_id: str | None, source: Source) -> tuple[str, Iterator[bytes]]:
    """The id to import under (`scope_id`, else the one the export's header names) and the body's
    chunks, the header included."""
    body = chunks(source)
    if scope_id is not None:
        return scope_id, body
    head = bytearray()
    for chunk in body:
        head += chunk
        if b"\n" in head or len(head) > MAX_HEADER_BYTES:
            break
    try:
        header = json.loads(bytes(head).split(b"\n", 1)[0])
    except ValueError:
        header = None
    found = header.get("scope_id") if isinstance(header, dict) else None
    if not isinstance(found, str):
        raise InvalidArgumentError(
            "source: not a PowerContext Scope export (its first line names no scope_id); pass scope_id"
        )
    return found, itertools.chain([bytes(head)], body)
