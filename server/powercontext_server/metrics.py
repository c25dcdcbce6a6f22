"""`GET /metrics`: the server's Prometheus metrics, kept with prometheus-client.

Each app owns its registry (no process-wide state, so tests can run several apps). With several
worker processes, `serve` points `PROMETHEUS_MULTIPROC_DIR` at a fresh directory before any worker
imports prometheus-client; every worker then writes its values there and `/metrics`, whichever
worker answers, adds up all of them.
"""

from __future__ import annotations

import os
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector

from powercontext_runtime import BuiltContext

MULTIPROCESS_ENV = "PROMETHEUS_MULTIPROC_DIR"
CONTENT_TYPE = CONTENT_TYPE_LATEST
# A dict the edge puts in each request's scope; the endpoint writes its operation id there (the
# scope itself may be copied on the way, the dict is shared).
LABELS_SCOPE_KEY = "powercontext.labels"
# The operation label of requests no contract operation answered (unknown paths, refusals at the
# edge, the docs, the page and this endpoint).
OTHER = "other"

# A prepare takes about 1-3 ms; the long tail is what an operator looks for.
_LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
# From an empty answer to the contract's 32768-byte cap; 8000 is the default `max_bytes`.
_BYTES_BUCKETS = (0, 512, 1024, 2048, 4096, 8000, 16384, 32768)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._children: dict[tuple[Counter | Histogram, tuple[str, ...]], Any] = {}
        self._requests = Counter(
            "powercontext_http_requests",
            "HTTP requests answered, by contract operation and status.",
            ["operation", "status"],
            registry=self.registry,
        )
        self._latency = Histogram(
            "powercontext_http_request_duration_seconds",
            "Time from the request's arrival to the end of its answer, by operation and status.",
            ["operation", "status"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self._prepared_bytes = Histogram(
            "powercontext_prepared_content_bytes",
            "UTF-8 size of each prepared content (0 for an empty answer), prepare and explain alike.",
            buckets=_BYTES_BUCKETS,
            registry=self.registry,
        )
        self._candidates = Counter(
            "powercontext_prepare_candidates",
            "Candidates recall gave prepare, by family.",
            ["family"],
            registry=self.registry,
        )
        self._dropped = Counter(
            "powercontext_prepare_candidates_dropped",
            "Candidates left out of the prepared content, by family and reason (as the receipt names it).",
            ["family", "reason"],
            registry=self.registry,
        )
        self._remembered = Counter(
            "powercontext_memory_entries_remembered",
            "Entries remember and remember/batch were given, by outcome: `stored`, or `duplicate`"
            " (the Scope already held the text as an active entry, so nothing was stored).",
            ["outcome"],
            registry=self.registry,
        )
        self._store_errors = Counter(
            "powercontext_store_errors",
            "Requests that failed because the database or the search index could not answer (503).",
            registry=self.registry,
        )

        self._embedding_fallbacks = Counter(
            "powercontext_embedding_fallbacks",
            "Searches that answered lexically because the query's embedding failed, by reason"
            " (timeout, unavailable, status, invalid), or was not asked for while the server backs"
            " off from a failing endpoint (backoff).",
            ["reason"],
            registry=self.registry,
        )

    def observe_request(self, operation: str, status: int, seconds: float) -> None:
        labels = (operation, str(status))
        self._child(self._requests, labels).inc()
        self._child(self._latency, labels).observe(seconds)

    def observe_prepare(self, built: BuiltContext) -> None:
        self._prepared_bytes.observe(built.result.content_bytes)
        # Tallied first, so each label set is touched once per prepare, not once per candidate.
        tally: dict[tuple[str, str | None], int] = {}
        for considered in built.receipt:
            key = (considered.candidate.origin.family, considered.reason)
            tally[key] = tally.get(key, 0) + 1
        for (family, reason), count in tally.items():
            self._child(self._candidates, (family,)).inc(count)
            if reason is not None:
                self._child(self._dropped, (family, reason)).inc(count)

    def observe_remember(self, stored: int, duplicates: int) -> None:
        for outcome, count in (("stored", stored), ("duplicate", duplicates)):
            if count:
                self._child(self._remembered, (outcome,)).inc(count)

    def _child(self, metric: Counter | Histogram, labels: tuple[str, ...]) -> Any:
        # `labels()` costs microseconds a call, and a request makes several; the label sets are
        # few (operations × statuses, families × reasons), so each child is looked up once.
        key = (metric, labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*labels)
        return child

    def observe_embedding_fallback(self, reason: str) -> None:
        self._child(self._embedding_fallbacks, (reason,)).inc()

    def observe_store_error(self) -> None:
        self._store_errors.inc()

    def exposition(self) -> bytes:
        """The text format of every metric; of every worker's when they share a directory."""
        directory = os.environ.get(MULTIPROCESS_ENV)
        if not directory:
            return generate_latest(self.registry)
        merged = CollectorRegistry()
        MultiProcessCollector(merged, path=directory)  # type: ignore[no-untyped-call]
        return generate_latest(merged)
