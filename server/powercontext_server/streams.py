"""Streamed bodies and answers (`application/x-ndjson`, one JSON object per line): an import's body
is read line by line as the Runtime consumes it, an export's answer is sent chunk by chunk as the
Runtime reads it. Neither is ever held whole, so memory stays flat whatever the Scope's size.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import anyio
import anyio.from_thread
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.routing import compile_path

from powercontext_api.operations import OPERATIONS
from powercontext_runtime import MAX_EXPORT_LINE_BYTES as MAX_LINE_BYTES

STREAM_MEDIA_TYPE = "application/x-ndjson"
_STREAMED_BODIES = tuple(
    compile_path(op.path)[0] for op in OPERATIONS if op.body_media_type == STREAM_MEDIA_TYPE
)
# The same format under the names other tools give JSON Lines.
_STREAM_MEDIA_TYPES = frozenset({STREAM_MEDIA_TYPE, "application/jsonl", "application/x-jsonlines"})


def streamed_body(path: str) -> bool:
    """Whether requests to `path` stream their body (an import): no size cap, each line bounded
    instead, and a deadline for silence rather than for the whole body (`http_edge.py`)."""
    return any(pattern.fullmatch(path) for pattern in _STREAMED_BODIES)


def is_stream(content_type: str) -> bool:
    """A JSON Lines media type, any case, with parameters; a declared charset must be UTF-8."""
    media, _, parameters = content_type.partition(";")
    return media.strip().lower() in _STREAM_MEDIA_TYPES and utf8_or_unsaid(parameters)


def utf8_or_unsaid(parameters: str) -> bool:
    """Media type parameters (`; charset=utf-8; ...`) that declare no charset but UTF-8, the only
    one JSON has (RFC 8259 §8.1)."""
    for parameter in parameters.split(";"):
        name, _, value = parameter.partition("=")
        if name.strip().lower() == "charset" and value.strip().strip('"').lower() not in ("utf-8", "utf8"):
            return False
    return True


def request_lines(request: Request) -> Iterator[bytes]:
    """The body's lines, for the worker thread the Runtime runs in: each chunk is awaited on the
    event loop as the consumer asks for more, so one chunk and one line are held at a time. A line
    that grows past `MAX_LINE_BYTES` is handed on as it stands, for the importer to refuse, and
    nothing more is read. A client that goes away raises `ClientDisconnect`."""
    chunks = request.stream()

    async def receive() -> bytes | None:
        return await anext(chunks, None)

    pending = bytearray()
    while (chunk := anyio.from_thread.run(receive)) is not None:
        pending += chunk
        start = 0
        while (end := pending.find(b"\n", start)) >= 0:
            yield bytes(pending[start : end + 1])
            start = end + 1
        del pending[:start]
        if len(pending) > MAX_LINE_BYTES:
            yield bytes(pending)
            return
    if pending:  # a last line without its line feed
        yield bytes(pending)


async def streamed(chunks: Iterator[bytes]) -> AsyncIterator[bytes]:
    """The Runtime's chunks, each read in a worker thread; the iterator is closed however the answer
    ends (a client that leaves included), which ends the export's read transaction."""
    try:
        while (chunk := await run_in_threadpool(next, chunks, None)) is not None:
            yield chunk
    finally:
        close = getattr(chunks, "close", None)
        if close is not None:
            with anyio.CancelScope(shield=True):
                await run_in_threadpool(close)
