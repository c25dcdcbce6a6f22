"""`GET /metrics` (Prometheus text format, prometheus-client) and the JSON log format.

Counts are read back from the exposition text the way a scraper would parse it.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from devtools.server_process import ServerProcess
from powercontext_runtime import ConfigurationError, RetrievalUnavailable, Settings
from powercontext_server.settings import HttpSettings

from ..api.helpers import new_scope, remember
from ..conftest import NO_KEEPALIVE, LiveServer


def samples(http: httpx.Client) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = http.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def value(found: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str) -> float:
    return found.get((name, tuple(sorted(labels.items()))), 0.0)


def delta(before: dict[Any, float], after: dict[Any, float], name: str, **labels: str) -> float:
    return value(after, name, **labels) - value(before, name, **labels)


def test_remembered_entries_are_counted_stored_or_duplicate(http: httpx.Client) -> None:
    scope_id = new_scope(http)
    before = samples(http)
    remember(http, scope_id, "The gate code is 1234.")
    remember(http, scope_id, "the gate code is 1234.")  # a duplicate: nothing stored
    entries = [{"text": "One more fact."}, {"text": "The gate code is  1234."}, {"text": "one more FACT."}]
    response = http.post("/v1/memory/remember/batch", json={"scope_id": scope_id, "entries": entries})
    assert response.status_code == 200, response.text
    after = samples(http)
    name = "powercontext_memory_entries_remembered_total"
    assert delta(before, after, name, outcome="stored") == 2
    assert delta(before, after, name, outcome="duplicate") == 3


def test_requests_latency_bytes_and_candidates_are_counted(http: httpx.Client) -> None:
    scope_id = new_scope(http)
    for i in range(5):
        remember(http, scope_id, f"metrics gateway fact {i}: " + "word " * 200)
    before = samples(http)
    body = {
        "scope_id": scope_id,
        "query": "metrics gateway",
        "max_bytes": 1200,
        "assembly": {"sections": [{"family": "memory", "limit": 3}]},
    }
    prepared = http.post("/v1/context/prepare", json=body).json()
    explained = http.post("/v1/context/prepare/explain", json=body).json()
    assert http.post("/v1/context/prepare", json={**body, "max_bytes": 1}).status_code == 422
    after = samples(http)

    for operation, status in (
        ("prepare_context", "200"),
        ("explain_prepare_context", "200"),
        ("prepare_context", "422"),
    ):
        assert (
            delta(before, after, "powercontext_http_requests_total", operation=operation, status=status) == 1
        )
        assert (
            delta(
                before,
                after,
                "powercontext_http_request_duration_seconds_count",
                operation=operation,
                status=status,
            )
            == 1
        )
    # Both prepares are observed; a refused body never reaches prepare.
    assert delta(before, after, "powercontext_prepared_content_bytes_count") == 2
    assert delta(before, after, "powercontext_prepared_content_bytes_sum") == 2 * prepared["content_bytes"]
    considered = len(explained["items"])
    assert delta(before, after, "powercontext_prepare_candidates_total", family="memory") == 2 * considered
    for reason in ("limit", "budget", "below_minimum_body"):
        left_out = sum(1 for item in explained["items"] if item["reason"] == reason)
        dropped = delta(
            before, after, "powercontext_prepare_candidates_dropped_total", family="memory", reason=reason
        )
        assert dropped == 2 * left_out
    assert any(item["reason"] for item in explained["items"])


def test_unknown_paths_count_as_other(http: httpx.Client) -> None:
    before = samples(http)
    assert http.get("/v1/no-such-path").status_code == 404
    after = samples(http)
    assert delta(before, after, "powercontext_http_requests_total", operation="other", status="404") == 1


def test_store_errors_are_counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def unavailable(*args: Any, **kwargs: Any) -> Any:
        raise RetrievalUnavailable()

    server = LiveServer(Settings(database_url=f"sqlite:///{tmp_path / 'faults.sqlite3'}"))
    server.start()
    try:
        with httpx.Client(base_url=server.base_url) as http:
            scope_id = new_scope(http)
            before = samples(http)
            monkeypatch.setattr(server.application, "search_memory", unavailable)
            response = http.post("/v1/memory/search", json={"scope_id": scope_id, "query": "x"})
            assert response.status_code == 503
            after = samples(http)
    finally:
        server.stop()
    assert delta(before, after, "powercontext_store_errors_total") == 1
    assert (
        delta(before, after, "powercontext_http_requests_total", operation="search_memory", status="503") == 1
    )


def test_metrics_add_up_across_worker_processes(tmp_path: Path) -> None:
    """With two workers, whichever process answers `/metrics` reports every worker's requests."""
    server = ServerProcess(
        f"sqlite:///{tmp_path / 'metrics.sqlite3'}",
        tmp_path / "server.log",
        extra_env={"POWERCONTEXT_SERVER_WORKERS": "2"},
    )
    base = f"http://127.0.0.1:{server.port}"
    try:

        def hammer() -> None:
            # A new connection each time: the kernel spreads them over workers.
            with httpx.Client(base_url=base, limits=NO_KEEPALIVE) as http:
                for _ in range(25):
                    assert http.get("/health/live").status_code == 200

        threads = [threading.Thread(target=hammer) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        counts = set()
        with httpx.Client(base_url=base, limits=NO_KEEPALIVE) as http:
            for _ in range(6):
                counts.add(
                    value(
                        samples(http),
                        "powercontext_http_requests_total",
                        operation="health_live",
                        status="200",
                    )
                )
        assert counts == {100.0}
    finally:
        server.stop()


def test_json_log_lines_carry_the_request_id(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    server = ServerProcess(
        f"sqlite:///{tmp_path / 'json-log.sqlite3'}",
        log,
        extra_env={"POWERCONTEXT_SERVER_LOG_FORMAT": "json", "POWERCONTEXT_SERVER_LOG_LEVEL": "info"},
    )
    try:
        response = httpx.get(f"http://127.0.0.1:{server.port}/health/live")
        request_id = response.headers["X-PowerContext-Request-ID"]
    finally:
        server.stop()
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    (access,) = [line for line in lines if line.get("request_id") == request_id]
    assert access["logger"] == "powercontext.server.access"
    assert (access["method"], access["path"], access["status"]) == ("GET", "/health/live", 200)
    assert access["level"] == "info" and access["time"].endswith("+00:00")
    assert isinstance(access["duration_ms"], float)


def test_an_unknown_log_format_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="POWERCONTEXT_SERVER_LOG_FORMAT must be one of text, json"):
        HttpSettings.from_env({"POWERCONTEXT_SERVER_LOG_FORMAT": "xml"})
