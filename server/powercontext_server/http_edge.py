"""The HTTP/1.1 edge: uvicorn's httptools protocol with limits, and the uvicorn options that run it.

uvicorn alone reads a request head of any size, times a connection only once it has answered on it,
and answers malformed HTTP in plain text. `EdgeProtocol` adds, per connection:

- a cap on the request head: 431 `headers_too_large` (414 `uri_too_long` while still in the request
  line) as soon as more than the cap has arrived, so memory never grows with what a client sends;
- a deadline for the head, from the connection's opening or the head's first byte, and one for the
  rest of a declared body: 408 `request_timeout`, or a plain close when no request was begun (a
  streamed body, an import's, has no size cap and may take as long as it keeps coming: its deadline
  starts again with every piece that arrives);
- the JSON error envelope, 400 `malformed_request`, for whatever the parser refuses, never echoing it.

and per server process (`EdgeState`, shared by the connections of one uvicorn server):

- a cap on open connections: beyond it the connection idle the longest is closed, or, when every
  one is busy with a request, the newcomer gets 503 `overloaded` (as nginx reuses keep-alive
  connections when it runs short), so file descriptors never run out and a probe still gets in;
- the in-flight request limit (`middleware.ConcurrencyLimit`) around the application.

After an error answer the connection closes lingering: we stop sending and drop what still arrives
for a moment, because closing with unread input makes the kernel send a reset that can destroy the
answer before the client reads it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import resource
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from starlette.types import ASGIApp
from uvicorn._types import ASGI3Application
from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol
from uvicorn.server import ServerState

from .errors import (
    HEADERS_TOO_LARGE,
    JSON_MEDIA_TYPE,
    MALFORMED_REQUEST,
    OVERLOADED,
    REQUEST_ID_HEADER,
    REQUEST_TIMEOUT,
    URI_TOO_LONG,
    HttpError,
)
from .middleware import ConcurrencyLimit, access_logger
from .settings import HttpSettings
from .streams import streamed_body

logger = logging.getLogger("powercontext.server")

# How long a refused connection keeps draining input so that its answer is read, not reset.
LINGER_S = 2.0
# uvicorn's default listen backlog: up to this many connections can be accepted in one go.
BACKLOG = 2048


@dataclass(slots=True)
class EdgeState:
    """What the connections of one server process share: limits, idle order, the limited app."""

    http: HttpSettings
    # Connections not serving a request, longest idle first: the ones to close when over the cap.
    idle: OrderedDict[EdgeProtocol, None] = field(default_factory=OrderedDict)
    limited_app: ASGIApp | None = None

    def app(self, loaded: ASGIApp) -> ASGIApp:
        if self.limited_app is None:
            self.limited_app = ConcurrencyLimit(loaded, limit=self.http.max_concurrent_requests)
        return self.limited_app

    def longest_idle(self, besides: EdgeProtocol) -> EdgeProtocol | None:
        for protocol in self.idle:
            if protocol is not besides:
                del self.idle[protocol]
                return protocol
        return None


class EdgeProtocol(HttpToolsProtocol):
    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
        *,
        edge: EdgeState,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.edge = edge
        self.app = cast(ASGI3Application, edge.app(cast(ASGIApp, self.app)))
        self._deadline: asyncio.TimerHandle | None = None
        self._in_head = True  # between requests or receiving a head: the next bytes are a head
        self._head_bytes = 0
        self._request_line_ended = False
        self._lingering = False
        self._streamed = False  # the request's body is a stream (an import): its deadline is for silence

    # Connection ---------------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm(self.edge.http.head_timeout_s, self._head_deadline_passed)
        self._become_idle()
        if len(self.connections) > self.edge.http.max_connections:
            oldest = self.edge.longest_idle(besides=self)
            if oldest is None:
                self._refuse(OVERLOADED)
            else:
                oldest._close()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_deadline()
        self.edge.idle.pop(self, None)
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        # Feed a head to the parser no further than the cap, so it never buffers more than that.
        while data and not self._lingering and not self.transport.is_closing():
            if not self._in_head:
                if self._streamed:  # bytes keep coming: the deadline starts again
                    self._arm(self.edge.http.body_timeout_s, self._body_deadline_passed)
                super().data_received(data)
                return
            if self._deadline is None:  # the first byte of a request after an idle spell
                self._arm(self.edge.http.head_timeout_s, self._head_deadline_passed)
            room = self.edge.http.max_head_bytes - self._head_bytes
            if room <= 0:
                self._refuse(HEADERS_TOO_LARGE if self._request_line_ended else URI_TOO_LONG)
                return
            piece, data = data[:room], data[room:]
            self._head_bytes += len(piece)
            self._request_line_ended = self._request_line_ended or b"\n" in piece
            super().data_received(piece)
        # While lingering what arrives is dropped unread by the parser.

    def send_400_response(self, msg: str) -> None:
        self._refuse(MALFORMED_REQUEST)  # `msg` is uvicorn's plain-text reason: not ours to send

    def timeout_keep_alive_handler(self) -> None:
        if self._head_bytes == 0:  # a head begun before the last response went out has its deadline
            super().timeout_keep_alive_handler()

    # Parser callbacks -------------------------------------------------------------------------
    def on_headers_complete(self) -> None:
        self._in_head = False
        self._become_busy()
        self._arm(self.edge.http.body_timeout_s, self._body_deadline_passed)
        super().on_headers_complete()
        self._streamed = streamed_body(self.scope.get("path", ""))

    def on_message_complete(self) -> None:
        self._cancel_deadline()
        self._in_head = True
        self._head_bytes = 0
        self._request_line_ended = False
        self._streamed = False
        super().on_message_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        # `self.cycle` is a pipelined request's when one was waiting; then we are still busy.
        if self.cycle.response_complete and not self.transport.is_closing():
            self._become_idle()

    # Deadlines ----------------------------------------------------------------------------------
    def _arm(self, seconds: float, expired: Callable[[], None]) -> None:
        self._cancel_deadline()
        self._deadline = self.loop.call_later(seconds, expired)

    def _cancel_deadline(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _head_deadline_passed(self) -> None:
        self._deadline = None
        if self._head_bytes == 0:
            self._close()  # no request begun, so none to answer; as after an idle keep-alive
        else:
            self._refuse(REQUEST_TIMEOUT)

    def _body_deadline_passed(self) -> None:
        self._deadline = None
        if self.flow.read_paused:  # we stopped reading (flow control, pipelining), not the client
            self._arm(self.edge.http.body_timeout_s, self._body_deadline_passed)
        else:
            self._refuse(REQUEST_TIMEOUT)

    # Idle order ---------------------------------------------------------------------------------
    def _become_idle(self) -> None:
        self.edge.idle.pop(self, None)
        self.edge.idle[self] = None

    def _become_busy(self) -> None:
        self.edge.idle.pop(self, None)

    # Ending -------------------------------------------------------------------------------------
    def _close(self) -> None:
        self._cancel_deadline()
        self.edge.idle.pop(self, None)
        self.transport.close()

    def _refuse(self, error: HttpError) -> None:
        """Answer `error` where it cannot pass for the answer to an earlier request, then close."""
        if self._lingering or self.transport.is_closing():
            return
        cycle = self.cycle
        answerable = True
        if cycle is not None and not cycle.response_complete:
            # The running request is this one only once its head is complete (its body failed);
            # otherwise it is an earlier, pipelined request. Either way its application sees the
            # client gone.
            answerable = not self._in_head and not cycle.response_started
            cycle.disconnected = True
            cycle.message_event.set()
        if answerable:
            self.transport.write(self._error_response(error))
        self._linger()

    def _error_response(self, error: HttpError) -> bytes:
        request_id = uuid.uuid4().hex
        access_logger.info('%s "- -" %d %s', request_id, error.status, error.code)
        body = error.body()
        headers = [
            *self.server_state.default_headers,
            (b"content-type", JSON_MEDIA_TYPE.encode("latin-1")),
            (b"content-length", str(len(body)).encode("latin-1")),
            (b"connection", b"close"),
            (REQUEST_ID_HEADER.lower().encode("latin-1"), request_id.encode("latin-1")),
            *((k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in error.headers.items()),
        ]
        head = b"".join(name + b": " + value + b"\r\n" for name, value in headers)
        return STATUS_LINE[error.status] + head + b"\r\n" + body

    def _linger(self) -> None:
        self._lingering = True
        self._cancel_deadline()
        # First to go when connections run short.
        self._become_idle()
        self.edge.idle.move_to_end(self, last=False)
        if not self.transport.can_write_eof():  # TLS: no half-close
            self._close()
            return
        self.flow.resume_reading()
        self.transport.write_eof()
        self._deadline = self.loop.call_later(LINGER_S, self._close)


def raise_open_file_limit() -> None:
    """Every connection holds a file descriptor: let this process (and its workers) use all it may."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == hard:
        return
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ValueError, OSError):
        logger.warning("could not raise the open-file limit from %d to %d", soft, hard)


def connection_cap(requested: int) -> int:
    """`requested`, lowered if need be to leave file descriptors for a burst of accepts and the rest."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return requested
    room = soft - min(soft // 2, BACKLOG + 128)
    if requested <= room:
        return requested
    logger.warning(
        "POWERCONTEXT_SERVER_MAX_CONNECTIONS is %d but the open-file limit is %d: using %d",
        requested,
        soft,
        room,
    )
    return max(1, room)


def uvicorn_options(http: HttpSettings) -> dict[str, Any]:
    """uvicorn's settings for `powercontext serve` (either path) and the test servers alike.

    The protocol goes as a partial of an importable class, so the worker processes, which receive
    these options pickled, get their own `EdgeState` with the same limits. Unpickling it imports
    this package before a worker answers its supervisor's pings, which takes seconds on a busy
    machine, hence the longer ping timeout.
    """
    edge = EdgeState(dataclasses.replace(http, max_connections=connection_cap(http.max_connections)))
    return {
        "host": http.host,
        "port": http.port,
        "log_level": http.log_level,
        # Our own access line (with the request id) replaces uvicorn's; it never logs bodies or headers.
        "access_log": False,
        "log_config": None,
        "server_header": False,
        "http": functools.partial(EdgeProtocol, edge=edge),
        "ws": "none",  # no WebSocket routes; an upgrade would also leave this protocol's limits
        "timeout_keep_alive": http.keep_alive_timeout_s,
        "backlog": BACKLOG,
        "timeout_worker_healthcheck": 30,
    }
