"""Loopback test servers for the host tests (standard library only).

`RecordingServer` answers every request with a `Responder` and records what it received; the
responders make it a fake OpenAI-compatible model (`model_reply`, streaming SSE like a real
provider), a recording proxy in front of PowerContext (`forward_to`) or a scripted PowerContext
(`fixed_reply`). `HangingServer` accepts connections and never answers.
"""

from __future__ import annotations

import json
import socket
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass(frozen=True)
class Reply:
    status: int
    content_type: str
    body: bytes
    headers: Mapping[str, str] = field(default_factory=dict)


Responder = Callable[[Received], Reply]


class RecordingServer:
    """A threaded HTTP server on 127.0.0.1 (on `port`, else a free one) that records each request
    before answering it."""

    def __init__(self, responder: Responder, port: int = 0) -> None:
        self.received: list[Received] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", port), self._handler_class(responder))
        self._server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="recording-server",
            daemon=True,
        )

    def __enter__(self) -> RecordingServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def requests_to(self, path: str) -> list[Received]:
        with self._lock:
            return [item for item in self.received if item.path == path]

    def _record(self, item: Received) -> None:
        with self._lock:
            self.received.append(item)

    def _handler_class(self, responder: Responder) -> type[BaseHTTPRequestHandler]:
        record = self._record

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._answer()

            def do_POST(self) -> None:
                self._answer()

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                item = Received(self.command, self.path, dict(self.headers.items()), self.rfile.read(length))
                record(item)
                reply = responder(item)
                self.send_response(reply.status)
                self.send_header("Content-Type", reply.content_type)
                self.send_header("Content-Length", str(len(reply.body)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(reply.body)

        return Handler


def json_reply(status: int, payload: object) -> Reply:
    return Reply(status, "application/json", json.dumps(payload).encode("utf-8"))


def fixed_reply(reply: Reply) -> Responder:
    return lambda _request: reply


def forward_to(base_url: str) -> Responder:
    """Relay the request to `base_url` (body, Content-Type, Authorization) and relay the answer."""

    def respond(request: Received) -> Reply:
        headers = {k: v for k, v in request.headers.items() if k.lower() in {"content-type", "authorization"}}
        data = request.body if request.method == "POST" else None
        upstream = urllib.request.Request(
            base_url + request.path, data=data, headers=headers, method=request.method
        )
        try:
            with urllib.request.urlopen(upstream, timeout=10) as response:
                return Reply(response.status, response.headers.get_content_type(), response.read())
        except urllib.error.HTTPError as exc:
            return Reply(exc.code, exc.headers.get_content_type(), exc.read())

    return respond


MODEL_ANSWER = "All done."


def model_reply(request: Received) -> Reply:
    """An OpenAI-compatible chat model: SSE chunks for `stream: true`, one JSON object otherwise."""
    if request.method == "GET":
        return json_reply(200, {"object": "list", "data": [{"id": "fake-model", "object": "model"}]})
    if not request.path.endswith("/chat/completions"):
        return json_reply(404, {"error": {"message": "not found"}})
    if not request.json().get("stream"):
        message = {"role": "assistant", "content": MODEL_ANSWER}
        choice = {"index": 0, "message": message, "finish_reason": "stop"}
        return json_reply(
            200, {"id": "c1", "object": "chat.completion", "model": "fake-model", "choices": [choice]}
        )
    chunks = [
        _chunk({"role": "assistant", "content": MODEL_ANSWER}, None),
        _chunk({}, "stop"),
    ]
    body = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks) + "data: [DONE]\n\n"
    return Reply(200, "text/event-stream", body.encode("utf-8"))


def _chunk(delta: dict[str, Any], finish_reason: str | None) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
    return {
        "id": "c1",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "fake-model",
        "choices": [choice],
    }


def anthropic_reply(request: Received) -> Reply:
    """The Anthropic Messages API as Claude Code calls it: `POST /v1/messages` streamed as SSE
    events (or one JSON message), answering MODEL_ANSWER; token counting answers a fixed count."""
    path = request.path.split("?", 1)[0]
    if path == "/v1/messages/count_tokens":
        return json_reply(200, {"input_tokens": 10})
    if path != "/v1/messages":
        return json_reply(
            404, {"type": "error", "error": {"type": "not_found_error", "message": "not found"}}
        )
    body = request.json()
    usage = {"input_tokens": 10, "output_tokens": 3}
    message = {"id": "msg_1", "type": "message", "role": "assistant", "model": body.get("model", "m")}
    if not body.get("stream"):
        text = {"content": [{"type": "text", "text": MODEL_ANSWER}], "stop_reason": "end_turn"}
        return json_reply(200, {**message, **text, "stop_sequence": None, "usage": usage})
    events = [
        {"type": "message_start", "message": {**message, "content": [], "stop_reason": None, "usage": usage}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": MODEL_ANSWER}},
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": usage,
        },
        {"type": "message_stop"},
    ]
    stream = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
    return Reply(200, "text/event-stream", stream.encode("utf-8"))


class HangingServer:
    """Accepts TCP connections on 127.0.0.1 and never sends a byte."""

    def __init__(self) -> None:
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.bind(("127.0.0.1", 0))
        self._socket.listen(16)
        self._socket.settimeout(0.2)
        self.base_url = f"http://127.0.0.1:{self._socket.getsockname()[1]}"
        self.accepted = 0
        self._held: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, name="hanging-server", daemon=True)

    def __enter__(self) -> HangingServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        for connection in self._held:
            connection.close()
        self._socket.close()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self._socket.accept()
            except TimeoutError:
                continue
            self._held.append(connection)
            self.accepted += 1


def unused_port_url() -> str:
    """A loopback URL whose port had a listener a moment ago and has none now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def delayed(responder: Responder, seconds: float) -> Responder:
    """`responder`, answering each request `seconds` late (a slow server or network)."""

    def respond(request: Received) -> Reply:
        threading.Event().wait(seconds)
        return responder(request)

    return respond


def error_reply(status: int, code: str) -> Reply:
    return json_reply(status, {"error": {"code": code, "message": "m", "details": None}})


def batch_stored(request: Received) -> Reply:
    """A scripted `remember/batch` success: one citation per entry sent."""
    count = len(request.json()["entries"])
    citation = {
        "memory_ref": {"family": "memory", "artifact_id": "memory", "revision": 1},
        "entry_id": "entry-1",
        "entry_version_id": "entry-1-v1",
    }
    return json_reply(200, {"citations": [citation] * count})


def scripted_paths(replies: Mapping[str, list[Responder]]) -> Responder:
    """Answer each path with its responders in turn; the last one repeats."""
    lock = threading.Lock()
    calls: dict[str, int] = {}

    def respond(request: Received) -> Reply:
        with lock:
            index = calls.get(request.path, 0)
            calls[request.path] = index + 1
        options = replies.get(request.path)
        if not options:
            return error_reply(404, "not_found")
        return options[min(index, len(options) - 1)](request)

    return respond


def responses_reply(request: Received) -> Reply:
    """An OpenAI Responses API model, as Codex calls it: the model list on GET, and for
    `POST …/responses` one assistant message answering MODEL_ANSWER as an SSE stream
    (created, item added, text delta, item done, completed)."""
    if request.method == "GET":
        return json_reply(200, {"object": "list", "data": [{"id": "fake-model", "object": "model"}]})
    if not request.path.endswith("/responses"):
        return json_reply(404, {"error": {"message": "not found"}})
    message = {"type": "message", "id": "msg_1", "role": "assistant", "status": "in_progress", "content": []}
    text = {"type": "output_text", "text": MODEL_ANSWER, "annotations": []}
    done = {**message, "status": "completed", "content": [text]}
    usage = {
        "input_tokens": 1,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 1,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 2,
    }
    response = {
        "id": "resp_1",
        "object": "response",
        "model": "fake-model",
        "status": "in_progress",
        "output": [],
    }
    events = [
        {"type": "response.created", "response": response},
        {"type": "response.output_item.added", "output_index": 0, "item": message},
        {
            "type": "response.output_text.delta",
            "item_id": "msg_1",
            "output_index": 0,
            "content_index": 0,
            "delta": MODEL_ANSWER,
        },
        {"type": "response.output_item.done", "output_index": 0, "item": done},
        {
            "type": "response.completed",
            "response": {**response, "status": "completed", "output": [done], "usage": usage},
        },
    ]
    body = "".join(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n" for event in events)
    return Reply(200, "text/event-stream", body.encode("utf-8"))
