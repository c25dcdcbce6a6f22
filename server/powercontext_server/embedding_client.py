"""The client of an OpenAI-compatible embeddings endpoint (`POST {url}/embeddings`), as the
Runtime's `Embed` function: texts in, one float32 row per text out, or `EmbeddingFailed` naming
why (timeout, down, status, invalid). Each call has its own deadline, which bounds the whole call;
nothing is retried here (the query falls back to lexical recall, the background embedder tries
again later, and both back off from an endpoint that keeps failing: the Runtime's
`vectors/backoff.py`)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

import httpx
import numpy as np

from powercontext_runtime import EmbeddingFailed, EmbeddingLeg

from .settings import EmbeddingSettings

# The background embedder's batches: texts per call and the time one call may take.
BATCH_SIZE = 64
BATCH_TIMEOUT_S = 60.0
# Statuses that refuse one request's input (too long, malformed) from an endpoint that is up; any
# other (401, 404, 429, 5xx...) would fail every call alike, and the leg backs off from it.
REFUSALS = frozenset({400, 413, 422})


class EmbeddingClient:
    def __init__(self, settings: EmbeddingSettings) -> None:
        headers = {"Authorization": f"Bearer {settings.token}"} if settings.token else {}
        self._settings = settings
        self._http = httpx.Client(base_url=settings.url, headers=headers, trust_env=False)

    def embed(self, texts: Sequence[str], timeout_s: float) -> np.ndarray[Any, np.dtype[np.float32]]:
        """The texts' vectors, or `EmbeddingFailed`, within `timeout_s` from the call."""
        return _vectors(_in_time(lambda: self._post(list(texts), timeout_s), timeout_s), len(texts))

    def _post(self, texts: list[str], timeout_s: float) -> bytes:
        body = {"model": self._settings.model, "input": texts}
        try:
            response = self._http.post("/embeddings", json=body, timeout=timeout_s)
        except httpx.TimeoutException as exc:
            raise EmbeddingFailed("timeout") from exc
        except httpx.HTTPError as exc:
            raise EmbeddingFailed("unavailable") from exc
        if response.status_code != 200:
            raise EmbeddingFailed("status", refused=response.status_code in REFUSALS)
        return response.content

    def close(self) -> None:
        self._http.close()


def _in_time(call: Callable[[], bytes], timeout_s: float) -> bytes:
    """`call()` on a thread of its own, waited for `timeout_s` at most, else a timeout.

    httpx bounds each phase of a call (connect, send, each read) on its own, so a slow connect
    followed by a slow answer, or an answer sent a little at a time, could hold a prepare for
    several times its deadline. A call given up on ends by those timeouts; its daemon thread
    (some 50 us to start) holds up neither the caller nor the process's exit."""
    done: Future[bytes] = Future()

    def run() -> None:
        try:
            done.set_result(call())
        except BaseException as exc:  # handed to the caller, who re-raises it
            done.set_exception(exc)

    threading.Thread(target=run, name="powercontext-embedding", daemon=True).start()
    try:
        return done.result(timeout=timeout_s)
    except FutureTimeout as exc:
        raise EmbeddingFailed("timeout") from exc


def _vectors(content: bytes, count: int) -> np.ndarray[Any, np.dtype[np.float32]]:
    """The answer's `data[].embedding`, in `index` order; `EmbeddingFailed("invalid")` unless
    there is exactly one list of numbers per text."""
    try:
        data = json.loads(content)["data"]
        rows = sorted(data, key=lambda item: int(item["index"]))
        if [int(item["index"]) for item in rows] != list(range(count)):
            raise ValueError("indexes")
        return np.asarray([item["embedding"] for item in rows], dtype=np.float32)
    except (ValueError, TypeError, KeyError) as exc:
        raise EmbeddingFailed("invalid") from exc


def embedding_leg(
    settings: EmbeddingSettings,
    client: EmbeddingClient,
    on_fallback: Any,
    clock: Callable[[], float] = time.monotonic,
) -> EmbeddingLeg:
    return EmbeddingLeg(
        embed=client.embed,
        model=settings.model,
        dims=settings.dimensions,
        query_timeout_s=settings.timeout_ms / 1000,
        batch_timeout_s=BATCH_TIMEOUT_S,
        batch_size=BATCH_SIZE,
        on_fallback=on_fallback,
        vector_weight=settings.vector_weight,
        cache_bytes=settings.cache_mb * 2**20,
        clock=clock,
        query_prefix=settings.query_prefix,
        document_prefix=settings.document_prefix,
    )
