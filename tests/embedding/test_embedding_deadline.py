"""The query's embedding call keeps its deadline as a whole (issue 32, item 4): httpx's timeout
bounds each phase of a call (connect, send, each read), not the call, so an endpoint that sends
its answer a little at a time, each piece within the deadline, held the call past it."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from powercontext_runtime import EmbeddingFailed
from powercontext_server.embedding_client import EmbeddingClient
from powercontext_server.settings import EmbeddingSettings

DIMENSIONS = 4
ANSWER = json.dumps({"data": [{"index": 0, "embedding": [0.5] * DIMENSIONS}]}).encode()


@contextmanager
def endpoint(pause_s: float, sent: list[int] | None = None) -> Iterator[str]:
    """An embeddings endpoint that sends its whole answer's headers at once, then its body a
    byte at a time, `pause_s` apart, counting in `sent` the bytes it has begun to send."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(ANSWER)))
            self.end_headers()
            try:
                for byte in ANSWER:
                    if sent is not None:  # counted first: no client can have it before this
                        sent.append(byte)
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    time.sleep(pause_s)
            except OSError:
                pass  # the client gave up

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def client(url: str) -> EmbeddingClient:
    return EmbeddingClient(EmbeddingSettings(url=url, model="m", dimensions=DIMENSIONS))


def test_an_answer_sent_a_byte_at_a_time_past_the_deadline_is_a_timeout() -> None:
    # Each byte comes 20 ms after the last, well within the 150 ms deadline; the whole answer
    # takes over a second.
    with endpoint(0.02) as url:
        embedding = client(url)
        try:
            with pytest.raises(EmbeddingFailed) as failed:
                embedding.embed(["the parked car"], 0.15)
        finally:
            embedding.close()
    assert failed.value.reason == "timeout"


def test_the_call_ends_at_its_deadline_not_at_the_next_piece_after_it() -> None:
    # Pieces 0.9 s apart, each within the 1 s a read may wait: the call must end at 1 s, before the
    # endpoint sends its third byte (1.8 s after the call reached it), not when that byte arrives.
    sent: list[int] = []
    with endpoint(0.9, sent) as url:
        embedding = client(url)
        try:
            with pytest.raises(EmbeddingFailed) as failed:
                embedding.embed(["the parked car"], 1.0)
            sent_by_then = len(sent)
        finally:
            embedding.close()
    assert failed.value.reason == "timeout"
    assert sent_by_then < 3


def test_an_answer_sent_in_pieces_within_the_deadline_is_read_whole() -> None:
    with endpoint(0.0) as url:
        embedding = client(url)
        try:
            vectors = embedding.embed(["the parked car"], 5.0)
        finally:
            embedding.close()
    assert vectors.tolist() == [[0.5] * DIMENSIONS]
