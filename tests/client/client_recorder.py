"""A transport double that records the exact requests the client puts on the wire."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx

from powercontext_client import AsyncPowerContextClient, PowerContextClient

BASE_URL = "http://powercontext.test"

READY = {
    "schema": "powercontext.prepared-context.v1",
    "status": "ready",
    "content": "context",
    "content_bytes": 7,
}
EMPTY = {"schema": "powercontext.prepared-context.v1", "status": "empty", "content": None, "content_bytes": 0}
CITATION = {
    "memory_ref": {"family": "memory", "artifact_id": "memory", "revision": 3},
    "entry_id": "entry-1",
    "entry_version_id": "entry-1-v2",
}
ENTRY = {"citation": CITATION, "text": "Run make contract-test.", "kind": "fact", "state": "active"}
SCOPE = {
    "scope_id": "project:demo",
    "title": "Demo",
    "summary": "",
    "context_references": [],
    "version": 1,
}

Responder = Callable[[httpx.Request], httpx.Response]


class Recorder:
    """Answers every request with `respond` and keeps each request with its body bytes read."""

    def __init__(self, respond: Responder) -> None:
        self.requests: list[httpx.Request] = []
        self._respond = respond

    def __call__(self, request: httpx.Request) -> httpx.Response:
        request.read()
        self.requests.append(request)
        return self._respond(request)

    @property
    def last(self) -> httpx.Request:
        return self.requests[-1]

    def client(self, token: str | None = None) -> PowerContextClient:
        return PowerContextClient(BASE_URL, token, transport=httpx.MockTransport(self))

    def async_client(self, token: str | None = None) -> AsyncPowerContextClient:
        return AsyncPowerContextClient(BASE_URL, token, transport=httpx.MockTransport(self))


def reply(status: int, body: Any, headers: dict[str, str] | None = None) -> Responder:
    content = json.dumps(body).encode()
    all_headers = {"Content-Type": "application/json", **(headers or {})}
    return lambda _request: httpx.Response(status, content=content, headers=all_headers)
