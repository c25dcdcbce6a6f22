"""HTTP helpers for the reliability tests: a client that times each answer and survives the server
going away, and waiting until a server is ready."""

from __future__ import annotations

import http.client
import json
import time
import uuid
from dataclasses import dataclass
from typing import Any

# Transport failures: the server refused, reset or dropped the connection, or did not answer.
TRANSPORT_ERRORS = (OSError, http.client.HTTPException)


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    body: Any  # the decoded JSON body, or None
    seconds: float

    @property
    def error_code(self) -> str | None:
        if isinstance(self.body, dict) and isinstance(self.body.get("error"), dict):
            code = self.body["error"].get("code")
            return str(code) if code is not None else None
        return None


class Api:
    """One keep-alive connection to a server; a failed connection is reopened on the next call."""

    def __init__(self, port: int, timeout: float = 30.0) -> None:
        self._port = port
        self._timeout = timeout
        self._conn: http.client.HTTPConnection | None = None

    def call(self, method: str, path: str, payload: object | None = None) -> Answer:
        """The answer, timed from sending to the end of the body. A transport failure (refused,
        reset, timed out) raises OSError or http.client.HTTPException, after dropping the
        connection."""
        if self._conn is None:
            self._conn = http.client.HTTPConnection("127.0.0.1", self._port, timeout=self._timeout)
        body = None if payload is None else json.dumps(payload).encode("utf-8")
        headers = {} if body is None else {"content-type": "application/json"}
        started = time.perf_counter()
        try:
            self._conn.request(method, path, body=body, headers=headers)
            response = self._conn.getresponse()
            raw = response.read()
        except TRANSPORT_ERRORS:
            self.close()
            raise
        seconds = time.perf_counter() - started
        decoded = json.loads(raw) if raw else None
        return Answer(response.status, decoded, seconds)

    def post(self, path: str, payload: object) -> Answer:
        return self.call("POST", path, payload)

    def get(self, path: str) -> Answer:
        return self.call("GET", path)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def new_scope(api: Api) -> str:
    scope_id = f"reliability:{uuid.uuid4().hex[:12]}"
    answer = api.post("/v1/scopes", {"scope_id": scope_id, "title": "Reliability"})
    assert answer.status == 201, answer
    return scope_id


def wait_ready(api: Api, timeout: float = 60.0) -> float:
    """Seconds until GET /health/ready answers 200 (polled every 50 ms); fails after `timeout`."""
    started = time.perf_counter()
    last: Answer | None = None
    while time.perf_counter() - started < timeout:
        try:
            last = api.get("/health/ready")
        except TRANSPORT_ERRORS:
            last = None
        if last is not None and last.status == 200:
            return time.perf_counter() - started
        time.sleep(0.05)
    raise AssertionError(f"not ready within {timeout} s; last answer {last}")
