"""An OceanBase outage under a running `powercontext serve`: fail fast, say not ready, then resume.

The database goes away in two ways: hung (SIGSTOP: its sockets stay open, connections are accepted
by the kernel and nothing ever answers) and dead (SIGKILL, then started again on the same port and
base directory). While it is away, every prepare and remember is a 503 `retrieval_unavailable`
error envelope within 2 s, `/health/ready` is a 503 and `/health/live` a 200. Once it is back, the
same server process (never restarted) is ready again and answers every request, on every thread of
its pool, including those whose connections died with the old database process; the entry stored
before the outage is in the prepared content.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest

from devtools.seekdb import SeekdbServer
from devtools.server_process import ServerProcess

from .helpers import Answer, Api, new_scope, wait_ready

LIMIT_S = 2.0  # longest a request may take while the database is away
CONCURRENT = 8  # requests at once: several server threads, each with its own connection
CANARY = "The outage canary is a zephyrquill that sings at dawn over the harbour."
QUERY = "zephyrquill canary harbour"


def prepare(api: Api, scope_id: str) -> Answer:
    return api.post("/v1/context/prepare", {"scope_id": scope_id, "query": QUERY, "max_bytes": 4000})


def concurrently(port: int, call: Callable[[Api], Answer], count: int = CONCURRENT) -> list[Answer]:
    """`count` calls at once, each on its own connection."""

    def one(_: int) -> Answer:
        api = Api(port)
        try:
            return call(api)
        finally:
            api.close()

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(one, range(count)))


def assert_unavailable(answer: Answer, what: str) -> None:
    assert answer.status == 503, f"{what}: {answer}"
    assert set(answer.body) == {"error"}, f"{what}: {answer}"
    assert answer.body["error"]["code"] == "retrieval_unavailable", f"{what}: {answer}"
    assert isinstance(answer.body["error"]["message"], str), f"{what}: {answer}"
    assert answer.seconds < LIMIT_S, f"{what} took {answer.seconds:.2f} s"


def assert_prepared(answer: Answer, what: str) -> None:
    assert answer.status == 200, f"{what}: {answer}"
    assert answer.body["status"] == "ready", f"{what}: {answer}"
    assert CANARY in answer.body["content"], f"{what}: {answer}"


@pytest.mark.parametrize("outage", ["hung", "dead"])
def test_requests_fail_fast_while_the_database_is_away_and_resume_when_it_returns(
    outage: str, seekdb_server: SeekdbServer, start_server: Callable[..., ServerProcess]
) -> None:
    server = start_server(seekdb_server.new_database_url())
    pid = server.pid
    api = Api(server.port)
    scope_id = new_scope(api)
    stored = api.post("/v1/memory/remember", {"scope_id": scope_id, "text": CANARY})
    assert stored.status == 200, stored
    assert_prepared(prepare(api, scope_id), "prepare before the outage")
    # Several server threads now hold a connection each, all of which the outage breaks.
    for answer in concurrently(server.port, lambda a: prepare(a, scope_id)):
        assert_prepared(answer, "concurrent prepare before the outage")

    if outage == "hung":
        seekdb_server.pause()
    else:
        seekdb_server.kill()
    down: list[Answer] = []
    try:
        for _ in range(3):
            down.append(prepare(api, scope_id))
            assert_unavailable(down[-1], "prepare while the database is away")
        for answer in concurrently(server.port, lambda a: prepare(a, scope_id)):
            down.append(answer)
            assert_unavailable(answer, "concurrent prepare while the database is away")
        remembered = api.post("/v1/memory/remember", {"scope_id": scope_id, "text": "not stored"})
        assert_unavailable(remembered, "remember while the database is away")
        ready = api.get("/health/ready")
        assert_unavailable(ready, "/health/ready while the database is away")
        live = api.get("/health/live")
        assert (live.status, live.body) == (200, {"status": "ok"}), live
    finally:
        returned = time.perf_counter()
        if outage == "hung":
            seekdb_server.resume()
        else:
            seekdb_server.restart()  # same port and base directory
        restarted_s = time.perf_counter() - returned

    ready_s = wait_ready(api)
    # Every thread answers, those whose connection died with the database included.
    after = concurrently(server.port, lambda a: prepare(a, scope_id), 2 * CONCURRENT)
    for answer in after:
        assert_prepared(answer, "prepare after the database returned")
    assert_prepared(prepare(api, scope_id), "prepare after the database returned")
    again = api.post("/v1/memory/remember", {"scope_id": scope_id, "text": "Stored after the outage."})
    assert again.status == 200, again
    read = api.post("/v1/memory/entries/get", {"scope_id": scope_id, "citation": stored.body["citation"]})
    assert (read.status, read.body["text"]) == (200, CANARY), read
    assert server.process.poll() is None and server.pid == pid, "the server was not restarted"
    api.close()

    slowest = max(answer.seconds for answer in down)
    print(
        f"\noutage {outage}: {len(down)} prepares while away, 503 in "
        f"{min(a.seconds for a in down):.3f}-{slowest:.3f} s; database back in {restarted_s:.2f} s, "
        f"server ready {ready_s:.2f} s after; {len(after)} concurrent prepares after: all 200, slowest "
        f"{max(a.seconds for a in after):.3f} s"
    )
