"""Sessions of `powercontext mcp --http` are bounded (issue 37, item 6).

With the SDK's defaults, 10,000 `initialize` requests that never close locked every new MCP client
out (503 "Too many open sessions") for the 30-minute idle timeout and grew the process by ~380 MB.
Now a client (peer address) holds at most `--http-client-sessions`, all of them together at most
`--http-max-sessions`, a new session ends the least recently used one instead of being refused,
and a session idle for `--http-idle-minutes` ends. A session that was ended answers 404.

Raw HTTP opens the flood (as a hostile client would); the official SDK client is the newcomer.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest
from mcp import Client
from mcp_types.version import LATEST_HANDSHAKE_VERSION

from ..conftest import LiveServer
from .conftest import TIMEOUT_S, create_scope, mcp_http

HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def rpc(method: str, params: dict[str, object] | None = None) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}).encode()


INITIALIZE = rpc(
    "initialize",
    {
        "protocolVersion": LATEST_HANDSHAKE_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "flood", "version": "0"},
    },
)


def client_from(address: str) -> httpx.Client:
    """An HTTP client whose connections come from `address` (any 127.0.0.0/8 address is loopback)."""
    return httpx.Client(transport=httpx.HTTPTransport(local_address=address), timeout=TIMEOUT_S)


def open_session(http: httpx.Client, url: str) -> str:
    """`initialize`, and nothing after it: the session stays open on the server."""
    response = http.post(url, content=INITIALIZE, headers=HEADERS)
    assert response.status_code == 200, response.text
    return response.headers["mcp-session-id"]


def status_of(http: httpx.Client, url: str, session_id: str) -> int:
    """200 while the session is open, 404 once the server has ended it."""
    headers = {**HEADERS, "mcp-session-id": session_id, "mcp-protocol-version": LATEST_HANDSHAKE_VERSION}
    return http.post(url, content=rpc("ping"), headers=headers).status_code


def alive(http: httpx.Client, url: str, sessions: list[str]) -> list[str]:
    return [s for s in sessions if status_of(http, url, s) == 200]


@pytest.fixture
def bounded_url(server: LiveServer, tmp_path: Path) -> Iterator[str]:
    create_scope(server, "project:http")
    args = ("--scope", "project:http", "--http-client-sessions", "4", "--http-max-sessions", "6")
    with mcp_http(server, tmp_path / "mcp-http.log", *args) as url:
        yield url


async def test_a_flood_of_sessions_never_locks_a_new_client_out(bounded_url: str) -> None:
    with client_from("127.0.0.1") as http:
        flood = [open_session(http, bounded_url) for _ in range(40)]
        assert alive(http, bounded_url, flood) == flood[-4:]  # the client's bound; the rest answer 404
    with anyio.fail_after(TIMEOUT_S):
        async with Client(bounded_url, mode="legacy", read_timeout_seconds=TIMEOUT_S) as newcomer:
            result = await newcomer.call_tool("prepare_context", {"query": "anything"})
    assert not result.is_error


def test_the_least_recently_used_session_is_the_one_ended(bounded_url: str) -> None:
    with client_from("127.0.0.1") as http:
        first, second, *others = [open_session(http, bounded_url) for _ in range(4)]
        assert status_of(http, bounded_url, first) == 200  # now the most recently used
        newest = open_session(http, bounded_url)
        assert alive(http, bounded_url, [first, second, *others, newest]) == [first, *others, newest]


def test_every_client_together_holds_at_most_the_server_bound(bounded_url: str) -> None:
    with client_from("127.0.0.1") as one, client_from("127.0.0.2") as two:
        ones = [open_session(one, bounded_url) for _ in range(4)]
        twos = [open_session(two, bounded_url) for _ in range(4)]
        # six at most: the second client's third and fourth ended the first client's oldest two
        assert alive(one, bounded_url, ones) == ones[2:]
        assert alive(two, bounded_url, twos) == twos


def test_an_idle_session_ends_after_the_idle_time(server: LiveServer, tmp_path: Path) -> None:
    idle = ("--http-idle-minutes", "0.05")  # 3 s
    with mcp_http(server, tmp_path / "mcp-http.log", *idle) as url, client_from("127.0.0.1") as http:
        session = open_session(http, url)
        assert status_of(http, url, session) == 200
        time.sleep(5.0)
        assert status_of(http, url, session) == 404
        assert status_of(http, url, open_session(http, url)) == 200
