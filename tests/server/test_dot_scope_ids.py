"""Scope ids `.` and `..` on the wire (issue 37, item 7).

They are valid Scope ids (the contract refuses only `/`, `%`, control characters and blank ids).
Clients normalise a literal dot segment away, so they send `%2E`; the server decodes it back, and
a client that sends the literal segment unnormalised reaches the Scope as well.
"""

from __future__ import annotations

import socket
from collections.abc import Callable

import httpx
import pytest

from ..conftest import LiveServer


def raw_get(base_url: str, target: bytes) -> bytes:
    """The whole answer to `GET target` sent byte for byte, as no normalising client would."""
    host, port = base_url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(b"GET " + target + b" HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n")
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


@pytest.mark.parametrize(
    ("scope_id", "segments"), [(".", ["%2E", "%2e", "."]), ("..", ["%2E%2E", "%2e.", ".."])]
)
def test_a_dot_scope_is_reached_encoded_or_literal(
    start_server: Callable[..., LiveServer], scope_id: str, segments: list[str]
) -> None:
    server = start_server()
    with httpx.Client(base_url=server.base_url) as http:
        assert http.post("/v1/scopes", json={"scope_id": scope_id, "title": "dots"}).status_code == 201
        for segment in segments:
            answer = raw_get(server.base_url, f"/v1/scopes/{segment}".encode())
            head, _, body = answer.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 200"), answer
            assert httpx.Response(200, content=body).json()["scope_id"] == scope_id
        erased = http.delete(f"/v1/scopes/{'%2E' * len(scope_id)}")
        assert erased.status_code == 200 and erased.json()["scope_id"] == scope_id
        assert http.get(f"/v1/scopes/{'%2E' * len(scope_id)}").status_code == 404
