"""Limits at the HTTP edge (issue #14, item 2), against real servers and raw sockets.

A request head is refused once it passes its cap, in JSON; connections that send nothing, half a
head or half a body are closed within their deadline; requests beyond the in-flight limit get 503
with Retry-After; connections beyond the cap push out the longest idle; malformed HTTP gets the JSON
envelope without echoing the input; and `powercontext serve` with workers runs the same edge.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import selectors
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from powercontext_runtime import ConfigurationError
from powercontext_server.settings import HttpSettings
from tests.conftest import LiveServer, settings_for

POWERCONTEXT = Path(sys.executable).with_name("powercontext")
REQUEST_ID = "x-powercontext-request-id"
# Grace for a loaded machine on top of each stated deadline.
SLACK_S = 4.0


def envelope(code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "details": None}}


MALFORMED = envelope("malformed_request", "The request is not valid HTTP/1.1.")
TIMED_OUT = envelope("request_timeout", "The request was not received in time.")


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, LiveServer]]:
    """Private servers on SQLite, each configured for what it demonstrates."""
    envs = {
        # Short deadlines: the idle and half-sent connections are closed within a second.
        "short": {
            "POWERCONTEXT_SERVER_HEAD_TIMEOUT_S": "1",
            "POWERCONTEXT_SERVER_BODY_TIMEOUT_S": "1",
            "POWERCONTEXT_SERVER_KEEP_ALIVE_TIMEOUT_S": "1",
        },
        "two_in_flight": {"POWERCONTEXT_SERVER_MAX_CONCURRENT_REQUESTS": "2"},
        # Deadlines far off, so a connection closed early was pushed out by the cap.
        "twenty_connections": {
            "POWERCONTEXT_SERVER_MAX_CONNECTIONS": "20",
            "POWERCONTEXT_SERVER_MAX_CONCURRENT_REQUESTS": "4",
            "POWERCONTEXT_SERVER_HEAD_TIMEOUT_S": "60",
        },
    }
    started: dict[str, LiveServer] = {}
    try:
        for name, env in envs.items():
            server = LiveServer(settings_for(tmp_path_factory.mktemp(name)), http=HttpSettings.from_env(env))
            server.start()
            started[name] = server
        yield started
    finally:
        for server in started.values():
            server.stop()


def address(base_url: str) -> tuple[str, int]:
    host, port = base_url.removeprefix("http://").rsplit(":", 1)
    return host, int(port)


def exchange(base_url: str, data: bytes, timeout: float = 10.0) -> bytes:
    """Send `data` on a new connection and read until the server closes it."""
    with socket.create_connection(address(base_url), timeout=timeout) as conn:
        with contextlib.suppress(OSError):  # the server may stop reading once it has refused
            conn.sendall(data)
        return read_to_eof(conn)


def read_to_eof(conn: socket.socket) -> bytes:
    received = b""
    try:
        while chunk := conn.recv(65536):
            received += chunk
    except ConnectionResetError:  # a reset after the answer: closed all the same
        pass
    return received


def parse(raw: bytes) -> tuple[str, dict[str, str], bytes]:
    head, _, body = raw.partition(b"\r\n\r\n")
    status, *lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return status, headers, body


def assert_envelope(raw: bytes, status_line: str, expected: dict[str, Any]) -> dict[str, str]:
    """The exact status line, a JSON envelope of the stated length, and a closed connection."""
    status, headers, body = parse(raw)
    assert status == status_line, raw[:300]
    assert headers["content-type"] == "application/json"
    assert headers["connection"] == "close"
    assert int(headers["content-length"]) == len(body)
    assert len(headers[REQUEST_ID]) == 32
    assert json.loads(body) == expected
    return headers


# Head size -----------------------------------------------------------------------------------------
def test_a_one_mebibyte_header_is_refused_431_within_two_seconds(servers: dict[str, LiveServer]) -> None:
    request = b"GET /health/live HTTP/1.1\r\nHost: x\r\nX-Big: " + b"z" * (1 << 20) + b"\r\n\r\n"
    started = time.monotonic()
    raw = exchange(servers["short"].base_url, request)
    assert time.monotonic() - started < 2.0
    assert_envelope(
        raw,
        "HTTP/1.1 431 Request Header Fields Too Large",
        envelope("headers_too_large", "The request headers are too large."),
    )
    assert b"zzzz" not in raw


def test_a_100kb_request_line_is_refused_414(servers: dict[str, LiveServer]) -> None:
    raw = exchange(servers["short"].base_url, b"GET /" + b"q" * 100_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    assert_envelope(
        raw, "HTTP/1.1 414 Request-URI Too Long", envelope("uri_too_long", "The request target is too long.")
    )
    assert b"qqqq" not in raw


def test_a_head_just_under_the_cap_is_served(servers: dict[str, LiveServer]) -> None:
    request = b"GET /health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Pad: "
    request += b"p" * (65_536 - len(request) - 4) + b"\r\n\r\n"
    assert len(request) == 65_536
    status, _, body = parse(exchange(servers["short"].base_url, request))
    assert status == "HTTP/1.1 200 OK"
    assert json.loads(body) == {"status": "ok"}


# Malformed HTTP ------------------------------------------------------------------------------------
CLIENT_HELLO = bytes.fromhex("16030100c4010000c00303") + b"SECRET-RANDOM-BYTES-0123456789ab" + b"\x00" * 80


@pytest.mark.parametrize(
    "request_bytes",
    [
        pytest.param(b"GE T /health/live HTTP/1.1\r\nHost: SECRET\r\n\r\n", id="bad-method"),
        pytest.param(
            b"POST /v1/scopes HTTP/1.1\r\nHost: x\r\nContent-Length: SECRET\r\n\r\n{}",
            id="length-not-a-number",
        ),
        pytest.param(
            b"POST /v1/scopes HTTP/1.1\r\nHost: SECRET\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
            id="two-lengths",
        ),
        pytest.param(b"GET /health/live HTTP/1.1\r\nSECRET header: x\r\n\r\n", id="space-in-header-name"),
        pytest.param(b"GET /health/live HTTP/1.1\r\nX-A: SECRET\x00\r\n\r\n", id="nul-in-header-value"),
        pytest.param(CLIENT_HELLO, id="tls-client-hello"),
    ],
)
def test_malformed_http_gets_the_json_envelope_without_echo(
    servers: dict[str, LiveServer], request_bytes: bytes
) -> None:
    raw = exchange(servers["short"].base_url, request_bytes)
    assert_envelope(raw, "HTTP/1.1 400 Bad Request", MALFORMED)
    assert b"SECRET" not in raw


# Deadlines -----------------------------------------------------------------------------------------
KINDS = {
    "silent": b"",
    "half-request-line": b"GET /heal",
    "half-body": (
        b"POST /v1/scopes HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b'Content-Length: 100\r\n\r\n{"scope_id"'
    ),
    "kept-alive": b"GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n",
}


def test_idle_and_half_sent_connections_are_closed_within_the_deadline(
    servers: dict[str, LiveServer],
) -> None:
    base_url = servers["short"].base_url
    connections: list[tuple[str, socket.socket]] = []
    received: dict[socket.socket, bytes] = {}
    selector = selectors.DefaultSelector()
    try:
        for i in range(400):
            kind = list(KINDS)[i % len(KINDS)]
            conn = socket.create_connection(address(base_url), timeout=10)
            conn.sendall(KINDS[kind])
            conn.setblocking(False)
            connections.append((kind, conn))
            received[conn] = b""
            selector.register(conn, selectors.EVENT_READ)
        all_sent = time.monotonic()

        assert httpx.get(base_url + "/health/live", timeout=10).status_code == 200

        open_count = len(connections)
        while open_count and time.monotonic() < all_sent + 1 + SLACK_S:
            for key, _ in selector.select(timeout=0.2):
                ready = key.fileobj
                assert isinstance(ready, socket.socket)
                chunk = ready.recv(65536)
                received[ready] += chunk
                if not chunk:
                    selector.unregister(ready)
                    open_count -= 1
        assert open_count == 0, f"{open_count} connections still open after the deadline"
    finally:
        selector.close()
        for _, conn in connections:
            conn.close()

    for kind, conn in connections:
        raw = received[conn]
        if kind == "silent":
            assert raw == b""  # no request was begun, so there is none to answer
        elif kind == "kept-alive":
            status, _, body = parse(raw)
            assert status == "HTTP/1.1 200 OK" and json.loads(body) == {"status": "ok"}
        else:
            assert_envelope(raw, "HTTP/1.1 408 Request Timeout", TIMED_OUT)


# Requests in flight --------------------------------------------------------------------------------
def hold_request(base_url: str) -> socket.socket:
    """A request the application is serving: its head sent, its body still to come."""
    conn = socket.create_connection(address(base_url), timeout=10)
    conn.sendall(KINDS["half-body"])
    return conn


def test_requests_beyond_the_in_flight_limit_get_503_and_health_still_answers(
    servers: dict[str, LiveServer],
) -> None:
    base_url = servers["two_in_flight"].base_url
    held = [hold_request(base_url) for _ in range(2)]
    try:
        with httpx.Client(base_url=base_url, timeout=10) as client:
            deadline = time.monotonic() + 10
            response = client.get("/v1/capabilities")
            while response.status_code != 503 and time.monotonic() < deadline:
                time.sleep(0.05)  # until the server has taken up the held requests
                response = client.get("/v1/capabilities")
            assert response.status_code == 503
            assert response.headers["retry-after"] == "1"
            assert response.headers["content-type"] == "application/json"
            assert len(response.headers[REQUEST_ID]) == 32
            assert response.json() == envelope("overloaded", "The server is at capacity; retry later.")

            assert client.get("/health/live").json() == {"status": "ok"}
            assert client.get("/health/ready").json() == {"status": "ok"}
    finally:
        for conn in held:
            conn.close()

    # Once the held requests are gone, their places are free again.
    deadline = time.monotonic() + 10
    while (status := httpx.get(base_url + "/v1/capabilities", timeout=10).status_code) == 503:
        assert time.monotonic() < deadline, "the in-flight count never came down"
        time.sleep(0.05)
    assert status == 200


# Open connections ----------------------------------------------------------------------------------
def test_beyond_the_connection_cap_the_longest_idle_make_room(servers: dict[str, LiveServer]) -> None:
    base_url = servers["twenty_connections"].base_url
    idle = []
    try:
        for _ in range(40):
            idle.append(socket.create_connection(address(base_url), timeout=10))
            time.sleep(0.01)  # keep the order the server sees them in
        assert httpx.get(base_url + "/health/live", timeout=10).json() == {"status": "ok"}
        # The twenty oldest were closed to make room, long before their 60 s head deadline.
        for conn in idle[:20]:
            assert read_to_eof(conn) == b""
    finally:
        for conn in idle:
            conn.close()


# Settings ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "env",
    [
        {"POWERCONTEXT_SERVER_MAX_HEAD_BYTES": "0"},
        {"POWERCONTEXT_SERVER_HEAD_TIMEOUT_S": "ten"},
        {"POWERCONTEXT_SERVER_BODY_TIMEOUT_S": "-1"},
        {"POWERCONTEXT_SERVER_KEEP_ALIVE_TIMEOUT_S": "1.5"},
        {"POWERCONTEXT_SERVER_MAX_CONCURRENT_REQUESTS": "0"},
        {"POWERCONTEXT_SERVER_MAX_CONNECTIONS": "x"},
        {"POWERCONTEXT_SERVER_MAX_CONNECTIONS": "256"},  # not above the default 256 in flight
    ],
)
def test_a_bad_edge_setting_stops_serve_with_exit_2(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from powercontext_server.cli import main

    with pytest.raises(ConfigurationError):
        HttpSettings.from_env(env)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert main(["serve"]) == 2
    assert next(iter(env)) in capsys.readouterr().err


def test_edge_defaults() -> None:
    http = HttpSettings.from_env({})
    assert (http.max_head_bytes, http.head_timeout_s, http.body_timeout_s, http.keep_alive_timeout_s) == (
        65_536,
        10,
        30,
        5,
    )
    assert (http.max_concurrent_requests, http.max_connections) == (256, 4096)


# `powercontext serve` with workers -------------------------------------------------------------------
@pytest.fixture(scope="module")
def served_by_workers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, list[int]]]:
    """`powercontext serve` with two workers, started under a lowered soft open-file limit.

    Yields the base URL and the pids of the server and its workers.
    """
    data = tmp_path_factory.mktemp("workers")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_SERVER_")}
    env |= {"POWERCONTEXT_SERVER_WORKERS": "2", "POWERCONTEXT_SERVER_LOG_LEVEL": "warning"}
    command = [str(POWERCONTEXT), "serve", "--port", str(port), "--data-dir", str(data / "store")]
    log = (data / "server.log").open("wb")
    process = subprocess.Popen(
        ["prlimit", "--nofile=1024:", *command], env=env, stdout=log, stderr=subprocess.STDOUT
    )
    base_url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120  # two workers import everything on a shared machine
        while True:
            assert process.poll() is None, (data / "server.log").read_text()
            try:
                if httpx.get(base_url + "/health/ready", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "the server did not become ready"
            time.sleep(0.2)
        yield base_url, [process.pid, *children(process.pid)]
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


def children(pid: int) -> list[int]:
    return [
        int(child)
        for task in Path(f"/proc/{pid}/task").glob("*/children")
        for child in task.read_text().split()
    ]


def test_serve_with_workers_raises_the_open_file_limit(served_by_workers: tuple[str, list[int]]) -> None:
    _, pids = served_by_workers
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    for pid in pids:
        line = next(
            line
            for line in Path(f"/proc/{pid}/limits").read_text().splitlines()
            if line.startswith("Max open files")
        )
        soft_limit = line.split()[3]
        assert soft_limit == str(hard) or (soft_limit == "unlimited" and hard == resource.RLIM_INFINITY)


def test_serve_with_workers_refuses_malformed_http_in_json(served_by_workers: tuple[str, list[int]]) -> None:
    base_url, _ = served_by_workers
    for _ in range(4):  # new connections: the kernel spreads them over both workers
        assert_envelope(exchange(base_url, b"GE T / HTTP/1.1\r\n\r\n"), "HTTP/1.1 400 Bad Request", MALFORMED)


def test_serve_with_workers_refuses_a_64mib_header_without_holding_it(
    served_by_workers: tuple[str, list[int]],
) -> None:
    base_url, pids = served_by_workers
    before = peak_rss_kib(pids)
    raw = exchange(base_url, b"GET / HTTP/1.1\r\nX-Big: " + b"z" * (64 << 20) + b"\r\n\r\n", timeout=30)
    assert parse(raw)[0] == "HTTP/1.1 431 Request Header Fields Too Large"
    assert peak_rss_kib(pids) - before < 16 * 1024  # uvicorn alone held it three times over


def peak_rss_kib(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                total += int(line.split()[1])
    return total
