"""Clients that ask for large answers and never read them (issue 37, item 4).

300 such sockets, each asking for a 3.2 MB entry list, kept the server 1 GB larger until the client
left: every answer sat whole in its connection's write buffer, with no deadline. Now an answer
goes to the socket a piece at a time, so a connection buffers a bounded amount, and a connection
whose answer is not read within `POWERCONTEXT_SERVER_SEND_TIMEOUT_S` is cut.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable
from typing import Any

import httpx

from powercontext_server.http_edge import SEND_PIECE_BYTES

StartServer = Callable[..., Any]
SEND_TIMEOUT_S = 2
SOCKETS = 8
# asyncio pauses the server's writes above 64 KiB; one more piece may be written before it waits.
BUFFER_BOUND = 64 * 1024 + SEND_PIECE_BYTES
SLACK_S = 6.0


def large_scope(base_url: str) -> tuple[bytes, int]:
    """A Scope whose entry list is 200 entries of 64 kB: (the list request, its answer's size)."""
    with httpx.Client(base_url=base_url, timeout=60) as client:
        assert client.post("/v1/scopes", json={"scope_id": "project:large"}).status_code == 201
        entries = [{"text": f"{i} " + "🦦" * 15_990} for i in range(200)]
        for start in range(0, 200, 50):
            batch = {"scope_id": "project:large", "entries": entries[start : start + 50]}
            assert client.post("/v1/memory/remember/batch", json=batch).status_code == 200
        body = {"scope_id": "project:large", "limit": 200}
        answer = client.post("/v1/memory/entries/list", json=body)
        assert answer.status_code == 200 and len(answer.json()["entries"]) == 200
    payload = json.dumps(body).encode()
    request = (
        b"POST /v1/memory/entries/list HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
        + b"Content-Length: %d\r\n\r\n" % len(payload)
        + payload
    )
    return request, len(answer.content)


def non_reader(base_url: str, request: bytes) -> socket.socket:
    host, port = base_url.removeprefix("http://").rsplit(":", 1)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # a small window: the answer backs up
    sock.connect((host, int(port)))
    sock.sendall(request)
    return sock


def drain(sock: socket.socket) -> int:
    """Read what the server still delivers until it ends the connection; the byte count."""
    sock.settimeout(SLACK_S)
    total = 0
    try:
        while chunk := sock.recv(1 << 20):
            total += len(chunk)
    except ConnectionResetError:
        pass
    finally:
        sock.close()
    return total


def test_unread_answers_buffer_a_bounded_amount_and_are_cut_at_the_deadline(
    start_server: StartServer,
) -> None:
    server = start_server(
        POWERCONTEXT_SERVER_SEND_TIMEOUT_S=str(SEND_TIMEOUT_S),
        POWERCONTEXT_SERVER_MAX_BODY_BYTES=str(16 * 1024 * 1024),
    )
    request, answer_bytes = large_scope(server.base_url)
    assert answer_bytes > 12_000_000
    sockets = [non_reader(server.base_url, request) for _ in range(SOCKETS)]
    connections = server._server.server_state.connections
    time.sleep(1.0)  # every answer is being written by now, and backs up
    buffered = [c.transport.get_write_buffer_size() for c in list(connections) if c.transport]
    assert len(buffered) >= SOCKETS and max(buffered) <= BUFFER_BOUND, buffered
    cut_by = time.monotonic() + SEND_TIMEOUT_S + SLACK_S  # a loaded machine may cut them late
    while connections and time.monotonic() < cut_by:
        time.sleep(0.1)
    assert len(connections) == 0  # every one cut, none left holding its answer
    delivered = [drain(sock) for sock in sockets]
    assert all(0 < n < answer_bytes for n in delivered), delivered
    with httpx.Client(base_url=server.base_url) as client:  # the server itself is fine
        assert client.get("/health/live").status_code == 200


def test_a_client_that_reads_gets_the_whole_large_answer(start_server: StartServer) -> None:
    server = start_server(
        POWERCONTEXT_SERVER_SEND_TIMEOUT_S="1", POWERCONTEXT_SERVER_MAX_BODY_BYTES=str(16 * 1024 * 1024)
    )
    _, answer_bytes = large_scope(server.base_url)
    with httpx.Client(base_url=server.base_url, timeout=60) as http:
        for _ in range(3):  # in 64 KiB pieces, each read well within the deadline
            answer = http.post("/v1/memory/entries/list", json={"scope_id": "project:large", "limit": 200})
            assert answer.status_code == 200 and len(answer.content) == answer_bytes
