"""What `/metrics` bookkeeping costs a request, in CPU microseconds (target: at most 100 µs).

Per request the server records the request counter and latency histogram (every request) and, for
a prepare, the content-bytes histogram and the candidates considered and dropped by family and
reason. This times exactly those calls of `powercontext_server.metrics.Metrics` on the largest
receipt a prepare can have (26 candidates: the fitting benchmark's pools, most of them left out),
with process CPU time, and the same for a request that is not a prepare.
"""

from __future__ import annotations

import time

from powercontext_runtime import AssemblyOptions, Section, build_text_context
from powercontext_server import Metrics

from .inprocess import fitting_pools

ITERATIONS = 20_000


def metrics_cpu_us(repeats: int) -> dict[str, list[float]]:
    """Per repeat: CPU µs of the metrics calls of one prepare request, and of one other request."""
    pools = fitting_pools()
    options = AssemblyOptions(
        (Section("memory", 2), Section("experience", 2), Section("topic-memory", 2), Section("profile", 2))
    )
    built = build_text_context(pools, options, 4000)
    metrics = Metrics()
    out: dict[str, list[float]] = {"prepare": [], "other": []}
    for _ in range(repeats):
        started = time.process_time()
        for _ in range(ITERATIONS):
            metrics.observe_request("prepare_context", 200, 0.002)
            metrics.observe_prepare(built)
        out["prepare"].append((time.process_time() - started) * 1e6 / ITERATIONS)
        started = time.process_time()
        for _ in range(ITERATIONS):
            metrics.observe_request("search_memory", 200, 0.001)
        out["other"].append((time.process_time() - started) * 1e6 / ITERATIONS)
    return out
