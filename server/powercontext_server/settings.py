"""HTTP settings of the server: where it listens, how many workers, log level and format, the
limits of its HTTP edge (body and head size, time to send a request and to take an answer,
requests and connections at once) and how many reads run at once (`threads.py`).

The optional embedding endpoint (`EmbeddingSettings`) is the server's too: the Runtime is handed
a function that calls it (`embedding_client.py`).

Read once from `POWERCONTEXT_SERVER_*` environment variables (flags of `powercontext serve`
override the address). The Runtime's own settings (store, policies, access) are
`powercontext_runtime.config.Settings`.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from uvicorn.config import LOG_LEVELS

from powercontext_runtime import (
    DEFAULT_CACHE_BYTES,
    MAX_SPACE_CHARS,
    VECTOR_WEIGHT,
    AccessPolicy,
    ConfigurationError,
    positive_int,
    vector_space,
)

from .logs import LOG_FORMATS


@dataclass(frozen=True, slots=True)
class HttpSettings:
    host: str = "127.0.0.1"
    port: int = 8000
    max_body_bytes: int = 1_048_576
    log_level: str = "info"
    log_format: str = "text"
    workers: int = 1
    max_head_bytes: int = 65_536
    head_timeout_s: int = 10
    body_timeout_s: int = 30
    send_timeout_s: int = 30
    keep_alive_timeout_s: int = 5
    max_concurrent_requests: int = 256
    max_connections: int = 4096
    read_threads: int | None = None  # None: as `threads.read_threads` chooses for the database
    embedding: EmbeddingSettings | None = None  # None: lexical recall only

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> HttpSettings:
        env = os.environ if env is None else env
        settings = cls(
            host=env.get("POWERCONTEXT_SERVER_HOST", "127.0.0.1"),
            port=positive_int(env, "POWERCONTEXT_SERVER_PORT", 8000),
            max_body_bytes=positive_int(env, "POWERCONTEXT_SERVER_MAX_BODY_BYTES", 1_048_576),
            log_level=env.get("POWERCONTEXT_SERVER_LOG_LEVEL", "info").lower(),
            log_format=env.get("POWERCONTEXT_SERVER_LOG_FORMAT", "text").lower(),
            workers=positive_int(env, "POWERCONTEXT_SERVER_WORKERS", 1),
            max_head_bytes=positive_int(env, "POWERCONTEXT_SERVER_MAX_HEAD_BYTES", 65_536),
            head_timeout_s=positive_int(env, "POWERCONTEXT_SERVER_HEAD_TIMEOUT_S", 10),
            body_timeout_s=positive_int(env, "POWERCONTEXT_SERVER_BODY_TIMEOUT_S", 30),
            send_timeout_s=positive_int(env, "POWERCONTEXT_SERVER_SEND_TIMEOUT_S", 30),
            keep_alive_timeout_s=positive_int(env, "POWERCONTEXT_SERVER_KEEP_ALIVE_TIMEOUT_S", 5),
            max_concurrent_requests=positive_int(env, "POWERCONTEXT_SERVER_MAX_CONCURRENT_REQUESTS", 256),
            max_connections=positive_int(env, "POWERCONTEXT_SERVER_MAX_CONNECTIONS", 4096),
            read_threads=positive_int(env, "POWERCONTEXT_SERVER_READ_THREADS", 0) or None,
            embedding=EmbeddingSettings.from_env(env),
        )
        if settings.log_level not in LOG_LEVELS:
            raise ConfigurationError(f"POWERCONTEXT_SERVER_LOG_LEVEL must be one of {', '.join(LOG_LEVELS)}.")
        if settings.log_format not in LOG_FORMATS:
            raise ConfigurationError(
                f"POWERCONTEXT_SERVER_LOG_FORMAT must be one of {', '.join(LOG_FORMATS)}."
            )
        # Connections beyond the requests in flight are what lets a health probe in during overload.
        if settings.max_connections <= settings.max_concurrent_requests:
            raise ConfigurationError(
                "POWERCONTEXT_SERVER_MAX_CONNECTIONS must be greater than "
                "POWERCONTEXT_SERVER_MAX_CONCURRENT_REQUESTS."
            )
        return settings

    def check_binding(self, policy: AccessPolicy) -> None:
        """Without access control the server answers anyone who can reach it: loopback only."""
        if not policy.enforced and not is_loopback(self.host):
            raise ConfigurationError(
                f"Access is disabled, so the server only binds to a loopback address, not {self.host}."
            )


@dataclass(frozen=True, slots=True)
class EmbeddingSettings:
    """An OpenAI-compatible embeddings endpoint: `url` is its base (`POST {url}/embeddings`)."""

    url: str
    model: str
    dimensions: int
    token: str | None = field(default=None, repr=False)  # never printed
    # The query's embedding call gives up after this: prepare adds at most about this much.
    timeout_ms: int = 150
    # Fusion: what a cosine one standard deviation above the Scope's mean adds (the best lexical hit: 1).
    vector_weight: float = VECTOR_WEIGHT
    # MiB of searched vectors held in memory per process, every family's together.
    cache_mb: int = DEFAULT_CACHE_BYTES // 2**20
    # Put before each query, and each stored text, as they are embedded (the model's own convention).
    query_prefix: str = ""
    document_prefix: str = ""

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> EmbeddingSettings | None:
        """None unless POWERCONTEXT_SERVER_EMBEDDING_URL is set; then model and dimensions too."""
        url = env.get("POWERCONTEXT_SERVER_EMBEDDING_URL", "")
        if not url:
            return None
        if not url.startswith(("http://", "https://")):
            raise ConfigurationError("POWERCONTEXT_SERVER_EMBEDDING_URL must start with http:// or https://.")
        model = env.get("POWERCONTEXT_SERVER_EMBEDDING_MODEL", "")
        if not model:
            raise ConfigurationError(
                "POWERCONTEXT_SERVER_EMBEDDING_MODEL must name the model when an embedding URL is set."
            )
        if env.get("POWERCONTEXT_SERVER_EMBEDDING_FUSION_K"):  # a setting that would do nothing now
            raise ConfigurationError(
                "POWERCONTEXT_SERVER_EMBEDDING_FUSION_K is no longer read: fusion does not use reciprocal"
                " ranks; unset it (POWERCONTEXT_SERVER_EMBEDDING_WEIGHT weighs the vector leg)."
            )
        if not env.get("POWERCONTEXT_SERVER_EMBEDDING_DIMENSIONS"):
            raise ConfigurationError(
                "POWERCONTEXT_SERVER_EMBEDDING_DIMENSIONS must be set when an embedding URL is set."
            )
        document_prefix = env.get("POWERCONTEXT_SERVER_EMBEDDING_DOCUMENT_PREFIX", "")
        if len(vector_space(model, document_prefix)) > MAX_SPACE_CHARS:
            raise ConfigurationError(
                "POWERCONTEXT_SERVER_EMBEDDING_MODEL and POWERCONTEXT_SERVER_EMBEDDING_DOCUMENT_PREFIX"
                f" are too long together: vectors are stored under both, in at most {MAX_SPACE_CHARS}"
                " characters."
            )
        return cls(
            url=url.rstrip("/"),
            model=model,
            dimensions=positive_int(env, "POWERCONTEXT_SERVER_EMBEDDING_DIMENSIONS", 0),
            token=env.get("POWERCONTEXT_SERVER_EMBEDDING_TOKEN") or None,
            timeout_ms=positive_int(env, "POWERCONTEXT_SERVER_EMBEDDING_TIMEOUT_MS", 150),
            vector_weight=_weight(env, "POWERCONTEXT_SERVER_EMBEDDING_WEIGHT", VECTOR_WEIGHT),
            cache_mb=positive_int(
                env, "POWERCONTEXT_SERVER_EMBEDDING_CACHE_MB", DEFAULT_CACHE_BYTES // 2**20
            ),
            query_prefix=env.get("POWERCONTEXT_SERVER_EMBEDDING_QUERY_PREFIX", ""),
            document_prefix=document_prefix,
        )


def _weight(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name) or ""
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not (0 < value <= 100):  # NaN fails too
        raise ConfigurationError(f"{name} must be a number above 0 and at most 100.")
    return value


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
