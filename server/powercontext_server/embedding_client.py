"""The client of an OpenAI-compatible embeddings endpoint (`POST {url}/embeddings`), as the
Runtime's `Embed` function: texts in, one float32 row per text out, or `EmbeddingFailed` naming
why (timeout, down, status, invalid). Each call has its own deadline; nothing is retried here (the
query falls back to lexical recall, the background embedder tries again later, and both back off
from an endpoint that keeps failing: the Runtime's `vectors/backoff.py`)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
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
        """The texts' vectors, the whole call within `timeout_s` (up to one read's wait past it)."""
        body = {"model": self._settings.model, "input": list(texts)}
        deadline = time.monotonic() + timeout_s
        try:
            with self._http.stream("POST", "/embeddings", json=body, timeout=timeout_s) as response:
                if response.status_code != 200:
                    raise EmbeddingFailed("status", refused=response.status_code in REFUSALS)
                content = _read_by(response, deadline)
        except httpx.TimeoutException as exc:
            raise EmbeddingFailed("timeout") from exc
        except httpx.HTTPError as exc:
            raise EmbeddingFailed("unavailable") from exc
        return _vectors(content, len(texts))

    def close(self) -> None:
        self._http.close()


def _read_by(response: httpx.Response, deadline: float) -> bytes:
    """The answer's body, read by `deadline` (on the monotonic clock) or `EmbeddingFailed`.

    httpx's timeout bounds each read, not the call: an endpoint that sends its answer a little
    at a time would hold a prepare for as long as it kept sending. So each read may wait only
    what is left (httpcore takes a read's timeout from the request's `timeout` extension at every
    read), and a body not whole by the deadline is a timeout."""
    timeouts = response.request.extensions["timeout"]
    pieces = []
    for piece in response.iter_bytes():
        pieces.append(piece)
        left = deadline - time.monotonic()
        if left <= 0:
            raise EmbeddingFailed("timeout")
        timeouts["read"] = left
    return b"".join(pieces)


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
        rrf_k=settings.fusion_k,
        vector_weight=settings.vector_weight,
        cache_bytes=settings.cache_mb * 2**20,
        clock=clock,
    )
