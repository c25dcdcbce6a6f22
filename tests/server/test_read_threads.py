"""How many reads the server runs at once (issue #34, item 0), on real servers of both backends.

On SQLite a read is CPU work under the GIL, so one runs at a time and the rest wait on the event
loop, holding no thread: eight in eight threads cost a third more CPU each in hand-overs. Writes,
health probes and public calls are not held up by waiting reads, and OceanBase reads, which wait on
the network, still run side by side. Reads are held inside the Runtime by a patched method (the
endpoint looks the method up per call) until the test lets them go.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from powercontext_runtime import ConfigurationError, open_application
from powercontext_server.settings import EmbeddingSettings, HttpSettings
from powercontext_server.threads import read_threads
from tests.conftest import LiveServer, database_env, settings_for

from ..api.helpers import new_scope, remember

READS = 6
# Long enough for every waiting read to have entered, were it let in.
SETTLE_S = 0.5


class HeldReads:
    """Wraps a Runtime method: every call waits inside until `release()`; counts who is inside."""

    def __init__(self, method: Callable[..., Any]) -> None:
        self._method = method
        self._lock = threading.Lock()
        self._released = threading.Event()
        self.inside = 0
        self.most_inside = 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            self.inside += 1
            self.most_inside = max(self.most_inside, self.inside)
        try:
            self._released.wait(timeout=60)
            return self._method(*args, **kwargs)
        finally:
            with self._lock:
                self.inside -= 1

    def wait_for(self, count: int) -> None:
        deadline = time.monotonic() + 30
        while self.inside < count:
            assert time.monotonic() < deadline, f"only {self.inside} reads got in"
            time.sleep(0.02)

    def release(self) -> None:
        self._released.set()


@pytest.fixture
def held_prepares(start_server: Callable[..., LiveServer]) -> Iterator[tuple[LiveServer, str, HeldReads]]:
    server = start_server()
    with httpx.Client(base_url=server.base_url, timeout=30) as client:
        scope_id = new_scope(client)
        remember(client, scope_id, "the otter sleeps by the river")
    held = HeldReads(server.application.prepare_context)
    server.application.prepare_context = held  # type: ignore[method-assign]
    try:
        yield server, scope_id, held
    finally:
        held.release()


def prepare_in_threads(base_url: str, scope_id: str, count: int) -> list[Any]:
    def one(_: int) -> int:
        with httpx.Client(base_url=base_url, timeout=60) as client:
            body = {"scope_id": scope_id, "query": "otter", "assembly": {}}
            return client.post("/v1/context/prepare", json=body).status_code

    pool = ThreadPoolExecutor(count)
    futures = [pool.submit(one, i) for i in range(count)]
    pool.shutdown(wait=False)
    return futures


def test_reads_take_turns_on_sqlite_and_run_side_by_side_on_oceanbase(
    backend: str, held_prepares: tuple[LiveServer, str, HeldReads]
) -> None:
    server, scope_id, held = held_prepares
    futures = prepare_in_threads(server.base_url, scope_id, READS)
    expected = 1 if backend == "sqlite" else READS
    held.wait_for(expected)
    time.sleep(SETTLE_S)
    assert held.most_inside == expected
    # While the reads are held, everything else is answered.
    with httpx.Client(base_url=server.base_url, timeout=30) as client:
        assert client.get("/health/live").json() == {"status": "ok"}
        assert client.get("/health/ready").json() == {"status": "ok"}
        assert client.get("/v1/capabilities").status_code == 200
        remember(client, scope_id, "the otter wakes at dawn")
    held.release()
    assert [f.result(timeout=60) for f in futures] == [200] * READS
    assert held.most_inside == expected


@pytest.mark.parametrize("backend", ["sqlite"])
def test_the_number_of_reads_at_once_is_a_setting(
    backend: str, start_server: Callable[..., LiveServer]
) -> None:
    server = start_server(POWERCONTEXT_SERVER_READ_THREADS="3")
    with httpx.Client(base_url=server.base_url, timeout=30) as client:
        scope_id = new_scope(client)
    held = HeldReads(server.application.prepare_context)
    server.application.prepare_context = held  # type: ignore[method-assign]
    try:
        futures = prepare_in_threads(server.base_url, scope_id, READS)
        held.wait_for(3)
        time.sleep(SETTLE_S)
        assert held.most_inside == 3
    finally:
        held.release()
    assert [f.result(timeout=60) for f in futures] == [200] * READS


def test_reads_that_wait_on_the_embedding_endpoint_share_the_wide_pool() -> None:
    embedding = EmbeddingSettings(url="http://127.0.0.1:9", model="m", dimensions=4)
    assert read_threads(HttpSettings(), reads_in_process=True) == 1
    assert read_threads(HttpSettings(embedding=embedding), reads_in_process=True) is None
    assert read_threads(HttpSettings(), reads_in_process=False) is None
    assert read_threads(HttpSettings(read_threads=4), reads_in_process=False) == 4


def test_only_the_embedded_backend_reads_in_process(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    app = open_application(settings_for(tmp_path, **database_env(request, backend)))
    try:
        assert app.reads_in_process is (backend == "sqlite")
    finally:
        app.close()


@pytest.mark.parametrize("raw", ["0", "-1", "two", "1.5"])
def test_a_bad_read_threads_setting_is_refused(raw: str) -> None:
    with pytest.raises(ConfigurationError, match="POWERCONTEXT_SERVER_READ_THREADS"):
        HttpSettings.from_env({"POWERCONTEXT_SERVER_READ_THREADS": raw})
