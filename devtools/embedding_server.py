"""A real embedding model behind the OpenAI-compatible `POST /v1/embeddings`, on loopback, for
tests and the evaluation (`python -m devtools.embedding_server --port 8100` runs it alone).

The model is WordLlama's `l2_supercat` at 256 dimensions, whose weights and tokenizer ship inside
the `wordllama` wheel (a dev dependency): they are read from the installed package, never
downloaded (WordLlama's own loader looks for the bundled tokenizer in the wrong directory and
would go to the network, so it is not used). `EmbeddingServer` serves any `embed` function, so a
test can also put a faulty one (slow, failing, wrong dimensions) behind the same interface.
"""

from __future__ import annotations

import argparse
import json
import threading
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np

MODEL = "wordllama-l2-supercat-256"
DIMENSIONS = 256

Embed = Callable[[Sequence[str]], Any]  # texts -> rows of numbers, one per text


def wordllama_embed() -> Embed:
    """The bundled WordLlama model as an `Embed` (unit vectors, float32)."""
    import wordllama
    from safetensors import safe_open
    from tokenizers import Tokenizer
    from wordllama.inference import WordLlamaInference

    root = Path(wordllama.__file__).parent
    tokenizer = Tokenizer.from_file(str(root / "tokenizers" / "l2_supercat_tokenizer_config.json"))
    with safe_open(str(root / "weights" / "l2_supercat_256.safetensors"), framework="np") as weights:
        table = weights.get_tensor("embedding.weight")
    model = WordLlamaInference(table, tokenizer)
    lock = threading.Lock()  # one tokenizer, used by the server's threads in turn

    def embed(texts: Sequence[str]) -> Any:
        with lock:
            return np.asarray(model.embed(list(texts), norm=True), dtype=np.float32)

    return embed


class EmbeddingServer:
    """`embed` served at `{url}/embeddings` on 127.0.0.1 from a thread; use as a context manager.
    An exception from `embed` is a 500; a body that is no embeddings request is a 400."""

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
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, format: str, *args: Any) -> None:  # quiet: tests read no access log
            pass

    return Handler


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Serve the bundled WordLlama model on 127.0.0.1.")
    parser.add_argument("--port", type=int, default=0, help="default: a free port")
    args = parser.parse_args(argv)
    name, dimensions = MODEL, DIMENSIONS
    with EmbeddingServer(wordllama_embed(), model=name, port=args.port) as server:
        # The settings of a server that uses it, one per line (the evaluation reads them).
        print(f"POWERCONTEXT_SERVER_EMBEDDING_URL={server.url}", flush=True)
        print(f"POWERCONTEXT_SERVER_EMBEDDING_MODEL={name}", flush=True)
        print(f"POWERCONTEXT_SERVER_EMBEDDING_DIMENSIONS={dimensions}", flush=True)
        threading.Event().wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
