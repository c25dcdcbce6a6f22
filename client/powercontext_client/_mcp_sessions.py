"""Streamable HTTP sessions of `powercontext mcp --http`, bounded in number and in idle time.

The SDK's session manager keeps a session until its client ends it or it has been idle for 30
minutes, and refuses every new one (503 "Too many open sessions") once 10,000 are open: 10,000
`initialize` requests that never close locked every new client out for half an hour and took
~380 MB. Here a session with no request in flight for `idle_timeout_s` ends; one client (a peer
address) holds at most `per_client` sessions and all clients together at most `max_sessions`; and
a session that would pass either bound ends the least recently used one instead, an idle one if
there is any. Old sessions never keep a new client out: a client whose session was ended gets
404, upon which the protocol has it open a new one.
"""

from __future__ import annotations

from collections import OrderedDict
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from mcp.server.lowlevel import Server
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER, StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
# Who is opening a session, from the request that opens it to its admission (same task).
_OPENER: ContextVar[str] = ContextVar("powercontext_mcp_session_opener", default="")


@dataclass(frozen=True)
class SessionLimits:
    max_sessions: int = 128
    per_client: int = 32
    idle_timeout_s: float = 600.0


@dataclass
class _Use:
    client: str
    in_flight: int = 0


class BoundedSessionManager(StreamableHTTPSessionManager):
    """The SDK's stateful session manager with `SessionLimits` and least recently used eviction."""

    def __init__(
        self, app: Server[Any], limits: SessionLimits, security_settings: TransportSecuritySettings | None
    ) -> None:
        super().__init__(
            app,
            security_settings=security_settings,
            session_idle_timeout=limits.idle_timeout_s,
            max_sessions=None,  # our bounds evict instead of refusing
        )
        self.limits = limits
        self._uses: OrderedDict[str, _Use] = OrderedDict()  # least recently used first

    @property
    def open_sessions(self) -> int:
        return len(self._server_instances)

    async def _handle_stateful_request(self, scope: Scope, receive: Receive, send: Send) -> None:
        session_id = Headers(scope=scope).get(MCP_SESSION_ID_HEADER)
        use = self._uses.get(session_id) if session_id is not None else None
        if use is None:  # a new session, or one that is gone (404)
            opener = _OPENER.set(_client_of(scope))
            try:
                await super()._handle_stateful_request(scope, receive, send)
            finally:
                _OPENER.reset(opener)
            return
        assert session_id is not None
        self._uses.move_to_end(session_id)
        use.in_flight += 1
        try:
            await super()._handle_stateful_request(scope, receive, send)
        finally:
            use.in_flight -= 1

    def _admit_session(self, requestor: Any) -> StreamableHTTPServerTransport | None:
        """Called under the SDK's admission lock, so the bounds hold exactly."""
        client = _OPENER.get()
        while (victim := self._over_bound(client)) is not None:
            self._end(victim)
        transport = super()._admit_session(requestor)
        if transport is not None and transport.mcp_session_id is not None:
            self._uses[transport.mcp_session_id] = _Use(client)
        return transport

    async def _discard_session(self, session_id: str, transport: StreamableHTTPServerTransport) -> None:
        self._uses.pop(session_id, None)
        await super()._discard_session(session_id, transport)

    def _over_bound(self, client: str) -> str | None:
        """The session to end before `client` opens one, or None when there is room."""
        mine = [sid for sid, use in self._uses.items() if use.client == client]
        if len(mine) >= self.limits.per_client:
            candidates = mine
        elif len(self._uses) >= self.limits.max_sessions:
            candidates = list(self._uses)
        else:
            return None
        return next((sid for sid in candidates if self._uses[sid].in_flight == 0), candidates[0])

    def _end(self, session_id: str) -> None:
        """Forget the session now (its id answers 404 from here on) and terminate it soon."""
        self._uses.pop(session_id, None)
        transport = self._server_instances.get(session_id)
        if transport is None:
            return
        self._server_instances.pop(session_id, None)
        assert self._task_group is not None
        self._task_group.start_soon(self._discard_session, session_id, transport)


def _client_of(scope: Scope) -> str:
    client = scope.get("client")
    return str(client[0]) if client else ""


def streamable_http_app(server: Server[Any], path: str, host: str, limits: SessionLimits) -> Starlette:
    """The SDK's streamable HTTP endpoint at `path`, served by a `BoundedSessionManager`.

    On a loopback `host`, requests must name a loopback host (and origin, when they send one), so a
    web page cannot reach the server through DNS rebinding; the SDK does the same by default.
    """
    security = None
    if host in LOOPBACK_HOSTS:
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
        )
    manager = BoundedSessionManager(server, limits, security)
    return Starlette(
        routes=[Route(path, endpoint=StreamableHTTPASGIApp(manager))],
        lifespan=lambda app: manager.run(),
    )
