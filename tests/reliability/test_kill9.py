"""Acknowledged writes survive kill -9: of the server (SQLite and OceanBase) and of the database.

Eight writer threads call remember against a real `powercontext serve`. A write is acknowledged
when its 200 answer arrived in full; its citation must then read back exactly (the exact read,
`POST /v1/memory/entries/get`), text equal character for character, whatever is killed afterwards.
Writes in flight when something dies may fail (a dropped connection, or a 503 while the database is
down): they were never acknowledged, and nothing is asserted about them.

- Server: after ~2.5 s of writes the server and its workers get SIGKILL; it is started again on
  the same database and every acknowledged citation is read back. On SQLite it runs two workers.
- Database (OceanBase): after ~2.5 s seekdb gets SIGKILL; writes answer 503 until it is started
  again on the same port and base directory, then succeed again through the same server process,
  which is never restarted; every acknowledged citation, from before and after, is read back.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from devtools.seekdb import SeekdbServer
from devtools.server_process import ServerProcess

from .helpers import TRANSPORT_ERRORS, Api, new_scope

WRITERS = 8
LOAD_S = 2.5  # writes before the kill
AFTER_RECOVERY_S = 1.0  # writes after the database is back, before they stop
READERS = 8


def text_for(writer: int, number: int) -> str:
    """Unique, with escapes, non-BMP and combining characters, of varying length."""
    filler = " lorem ipsum" * (number % 7) * 20
    return (
        f"writer {writer} write {number} {uuid.uuid4().hex}: naïve café — ✓ 𝄞 e\u0301 "
        f'"quoted" back\\slash\ttab\nnewline{filler}'
    )


class Ledger:
    """What the writers sent and what came back."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.acknowledged: list[tuple[dict[str, Any], str]] = []
        self.failures: Counter[str] = Counter()
        self.wrong_answers: list[str] = []

    def acknowledge(self, citation: dict[str, Any], text: str) -> None:
        with self.lock:
            self.acknowledged.append((citation, text))

    def fail(self, kind: str) -> None:
        with self.lock:
            self.failures[kind] += 1

    def count(self) -> int:
        with self.lock:
            return len(self.acknowledged)


def write(port: int, scope_id: str, writer: int, stop: threading.Event, ledger: Ledger) -> None:
    api = Api(port, timeout=15)
    number = 0
    while not stop.is_set():
        number += 1
        text = text_for(writer, number)
        try:
            answer = api.post("/v1/memory/remember", {"scope_id": scope_id, "text": text})
        except TRANSPORT_ERRORS:
            ledger.fail("transport")
            time.sleep(0.02)
            continue
        if answer.status != 200:
            ledger.fail(f"{answer.status} {answer.error_code}")
            time.sleep(0.02)
            continue
        if answer.body.get("text") != text:
            with ledger.lock:
                ledger.wrong_answers.append(f"remember answered {answer.body!r} for {text!r}")
        ledger.acknowledge(answer.body["citation"], text)
    api.close()


class Load:
    """The writer threads, started at once."""

    def __init__(self, port: int, scope_id: str) -> None:
        self.ledger = Ledger()
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=write, args=(port, scope_id, n, self._stop, self.ledger), daemon=True)
            for n in range(WRITERS)
        ]
        for thread in self._threads:
            thread.start()

    def wait_for_more(self, than: int, timeout: float) -> float:
        """Seconds until more than `than` writes are acknowledged; fails after `timeout`."""
        started = time.perf_counter()
        while self.ledger.count() <= than:
            assert time.perf_counter() - started < timeout, f"no write acknowledged within {timeout} s"
            time.sleep(0.02)
        return time.perf_counter() - started

    def stop(self) -> Ledger:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=30)
            assert not thread.is_alive(), "a writer did not stop"
        return self.ledger


def read_back(port: int, scope_id: str, acknowledged: list[tuple[dict[str, Any], str]]) -> list[str]:
    """Every acknowledged citation read exactly; the problems found (none when all is well)."""

    def check(part: list[tuple[dict[str, Any], str]]) -> list[str]:
        api = Api(port)
        problems = []
        for citation, text in part:
            answer = api.post("/v1/memory/entries/get", {"scope_id": scope_id, "citation": citation})
            if answer.status != 200:
                problems.append(f"{citation}: {answer.status} {answer.body}")
            elif answer.body["citation"] != citation or answer.body["text"] != text:
                problems.append(f"{citation}: read back {answer.body!r}, written {text!r}")
        api.close()
        return problems

    parts = [acknowledged[n::READERS] for n in range(READERS)]
    with ThreadPoolExecutor(READERS) as pool:
        return [problem for found in pool.map(check, parts) for problem in found]


def assert_all_read_back(port: int, scope_id: str, ledger: Ledger) -> int:
    """Every acknowledged write reads back exactly and the next write gets a later revision."""
    assert not ledger.wrong_answers, ledger.wrong_answers[:3]
    versions = [citation["entry_version_id"] for citation, _ in ledger.acknowledged]
    assert len(set(versions)) == len(versions), "two acknowledged writes share a citation"
    problems = read_back(port, scope_id, ledger.acknowledged)
    assert not problems, (
        f"{len(problems)} of {len(ledger.acknowledged)} acknowledged writes lost: {problems[:3]}"
    )
    # No acknowledged revision was lost and then handed out again.
    latest = max(citation["memory_ref"]["revision"] for citation, _ in ledger.acknowledged)
    answer = Api(port).post("/v1/memory/remember", {"scope_id": scope_id, "text": "After the crash."})
    assert answer.status == 200, answer
    assert answer.body["citation"]["memory_ref"]["revision"] > latest, answer
    return len(problems)


# Two workers (two processes writing one database file) on SQLite only: a server with two workers
# takes about twice as long to start, and this test starts it twice.
@pytest.mark.parametrize(("backend", "workers"), [("sqlite", 2), ("oceanbase", 1)])
def test_acknowledged_writes_survive_kill_9_of_the_server(
    backend: str,
    workers: int,
    request: pytest.FixtureRequest,
    tmp_path: Path,
    start_server: Callable[..., ServerProcess],
) -> None:
    if backend == "oceanbase":
        seekdb: SeekdbServer = request.getfixturevalue("seekdb_server")
        url = seekdb.new_database_url()
    else:
        url = f"sqlite:///{tmp_path / 'powercontext.sqlite3'}"
    server = start_server(url, POWERCONTEXT_SERVER_WORKERS=str(workers))
    scope_id = new_scope(Api(server.port))
    started = time.perf_counter()

    load = Load(server.port, scope_id)
    time.sleep(LOAD_S)
    killed_at = load.ledger.count()
    server.kill()
    ledger = load.stop()
    restarted = time.perf_counter()
    server.restart()
    restart_s = time.perf_counter() - restarted

    assert killed_at > 0, "nothing was acknowledged before the kill"
    assert set(ledger.failures) <= {"transport"}, ledger.failures
    lost = assert_all_read_back(server.port, scope_id, ledger)
    print(
        f"\nkill -9 server ({backend}, {workers} worker(s)): {len(ledger.acknowledged)} writes acknowledged, "
        f"{lost} lost; {sum(ledger.failures.values())} failed in flight; server restarted in "
        f"{restart_s:.2f} s; {time.perf_counter() - started:.1f} s in all"
    )


def test_acknowledged_writes_survive_kill_9_of_the_database(
    seekdb_server: SeekdbServer, start_server: Callable[..., ServerProcess]
) -> None:
    server = start_server(seekdb_server.new_database_url())
    pid = server.pid
    scope_id = new_scope(Api(server.port))
    started = time.perf_counter()

    load = Load(server.port, scope_id)
    time.sleep(LOAD_S)
    seekdb_server.kill()
    before = load.ledger.count()
    restarted = time.perf_counter()
    seekdb_server.restart()  # same port and base directory
    restart_s = time.perf_counter() - restarted
    resumed_s = load.wait_for_more(than=load.ledger.count(), timeout=60)
    after_restart = load.ledger.count()
    time.sleep(AFTER_RECOVERY_S)
    ledger = load.stop()

    assert before > 0, "nothing was acknowledged before the kill"
    assert len(ledger.acknowledged) > after_restart, "writes did not resume after the database returned"
    assert ledger.failures["503 retrieval_unavailable"] > 0, "no write saw the database down"
    assert set(ledger.failures) <= {"503 retrieval_unavailable"}, ledger.failures
    assert server.process.poll() is None and server.pid == pid, "the server was not restarted"
    lost = assert_all_read_back(server.port, scope_id, ledger)
    print(
        f"\nkill -9 seekdb: {len(ledger.acknowledged)} writes acknowledged ({before} before the kill), "
        f"{lost} lost; {ledger.failures['503 retrieval_unavailable']} answered 503 while it was down; "
        f"seekdb restarted in {restart_s:.2f} s, writes resumed {resumed_s:.2f} s later; "
        f"{time.perf_counter() - started:.1f} s in all"
    )
