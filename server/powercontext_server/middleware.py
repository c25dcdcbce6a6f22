"""The outer ASGI layers: the in-flight request limit, then request id on every response, request
body cap, one log line and the metrics (`metrics.py`) of each request.

`EdgeMiddleware` sits outside connexion's whole stack, so framework errors and 500s get the request
id too, and are counted. The body cap holds for chunked bodies as well: a body without Content-Length is read up to
the cap and replayed downstream with a Content-Length, which is also what connexion needs to see it
at all. A streamed body (an import) is not capped: it is read line by line as it is imported, each
line within its own bound (`streams.py`). `ConcurrencyLimit` wraps the whole app at the HTTP edge
(`http_edge.py` installs it) and only marks a request over the limit; `EdgeMiddleware` answers it,
with its request id and log line.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .errors import OVERLOADED, PAYLOAD_TOO_LARGE, REQUEST_ID_HEADER, REQUEST_ID_SCOPE_KEY, HttpError
from .metrics import LABELS_SCOPE_KEY, OTHER, Metrics

access_logger = logging.getLogger("powercontext.server.access")

_REQUEST_ID_HEADER = REQUEST_ID_HEADER.lower().encode("latin-1")
# Set by `ConcurrencyLimit` on a request beyond the limit; `EdgeMiddleware` answers it 503.
OVERLOADED_SCOPE_KEY = "powercontext.overloaded"
# Probes must get their answer precisely when the server is busiest.
HEALTH_PATHS = frozenset({"/health/live", "/health/ready"})


class ConcurrencyLimit:
    """At most `limit` requests of this process in the application at once (health checks aside).

    A request over the limit is refused at once rather than queued, so a burst costs the server
    nothing but the refusals; the caller is told when to retry.
    """

    def __init__(self, app: ASGIApp, *, limit: int) -> None:
        self.app = app
        self.limit = limit
        self.in_flight = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in HEALTH_PATHS:
            await self.app(scope, receive, send)
        elif self.in_flight >= self.limit:
            await self.app({**scope, OVERLOADED_SCOPE_KEY: True}, receive, send)
        else:
            self.in_flight += 1
            try:
                await self.app(scope, receive, send)
            finally:
                self.in_flight -= 1


class EdgeMiddleware:
    def __init__(
        self,
        app: ASGIApp,
        *,
        max_body_bytes: int,
        metrics: Metrics,
        streamed: Callable[[str], bool] = lambda path: False,
    ) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.metrics = metrics
        self.streamed = streamed  # paths whose body is a stream, read line by line and never capped

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        request_id = uuid.uuid4().hex
        scope[REQUEST_ID_SCOPE_KEY] = request_id
        labels: dict[str, str] = {}
        scope[LABELS_SCOPE_KEY] = labels
        id_header = (_REQUEST_ID_HEADER, request_id.encode("latin-1"))
        started = time.perf_counter()
        status = 0

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message = {**message, "headers": [*message.get("headers", ()), id_header]}
            await send(message)

        try:
            if scope.get(OVERLOADED_SCOPE_KEY):
                await _send_error(OVERLOADED, send_with_id)
                return
            body_scope, body_receive = await self._capped(scope, receive)
            if body_scope is None:
                await _send_error(PAYLOAD_TOO_LARGE, send_with_id)
            else:
                await self.app(body_scope, body_receive, send_with_id)
        finally:
            seconds = time.perf_counter() - started
            self.metrics.observe_request(labels.get("operation", OTHER), status, seconds)
            access_logger.info(
                '%s "%s %s" %d %.1fms',
                request_id,
                scope["method"],
                scope["path"],
                status,
                seconds * 1000,
                extra={
                    "request_id": request_id,
                    "method": scope["method"],
                    "path": scope["path"],
                    "status": status,
                    "duration_ms": round(seconds * 1000, 3),
                },
            )

    async def _capped(self, scope: Scope, receive: Receive) -> tuple[Scope | None, Receive]:
        """The scope and receive channel to pass on, or `(None, receive)` when the body is too large."""
        if self.streamed(scope["path"]):
            return scope, receive
        length: bytes | None = None
        chunked = False
        for name, value in scope["headers"]:
            if name == b"content-length":
                length = value
            elif name == b"transfer-encoding":
                chunked = True
        if length is not None and not chunked:
            # The server already enforces that the body matches a well-formed Content-Length.
            if length.strip().isdigit() and int(length) > self.max_body_bytes:
                return None, receive
            return scope, receive
        if not chunked:
            return scope, receive

        messages: list[Message] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                messages.append(message)
                break
            size += len(message.get("body", b""))
            if size > self.max_body_bytes:
                return None, receive
            messages.append(message)
            if not message.get("more_body", False):
                break

        body = b"".join(m.get("body", b"") for m in messages if m["type"] == "http.request")
        headers = [(n, v) for n, v in scope["headers"] if n not in (b"transfer-encoding", b"content-length")]
        headers.append((b"content-length", str(len(body)).encode("latin-1")))
        replay: list[Message] = [{"type": "http.request", "body": body, "more_body": False}]
        replay.extend(m for m in messages if m["type"] != "http.request")

        async def replayed() -> Message:
            if replay:
                return replay.pop(0)
            return await receive()

        return {**scope, "headers": headers}, replayed


async def _send_error(error: HttpError, send: Send) -> None:
    body = error.body()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode("latin-1")),
        (b"connection", b"close"),
    ]
    headers.extend((k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in error.headers.items())
    await send({"type": "http.response.start", "status": error.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
