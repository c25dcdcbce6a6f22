"""Sustained mixed load on a real server: clients that prepare and clients that remember, each on
a keep-alive connection of its own, while a sampler records a figure (such as the size of SQLite's
`-wal` file) every `interval` seconds. Used by tests/reliability/test_wal_bound.py and
bench/wal_growth.py."""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "heron",
    "locker",
    "ledger",
    "orbit",
    "quartz",
    "river",
    "signal",
    "tundra",
]


@dataclass
class LoadResult:
    acknowledged: int = 0  # remembers answered 200
    prepared: int = 0
    failures: list[str] = field(default_factory=list)
    samples: list[tuple[float, int]] = field(default_factory=list)  # (seconds since start, figure)


def _post(conn: http.client.HTTPConnection, path: str, body: object) -> int:
    conn.request("POST", path, body=json.dumps(body).encode(), headers={"content-type": "application/json"})
    response = conn.getresponse()
    response.read()
    return response.status


def seed(port: int, scope_id: str, entries: int) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    for i in range(entries):
        text = f"entry {i} " + " ".join(WORDS[(i + k) % len(WORDS)] for k in range(12))
        if _post(conn, "/v1/memory/remember", {"scope_id": scope_id, "text": text}) != 200:
            raise RuntimeError("seeding failed")
    conn.close()


def run(
    port: int, scope_id: str, seconds: float, clients: int, sample: Callable[[], int], interval: float = 0.1
) -> LoadResult:
    """`clients` remembering and `clients` preparing for `seconds`, sampling all the while."""
    result = LoadResult()
    stop = threading.Event()
    lock = threading.Lock()
    started = time.monotonic()

    def client(number: int, remembering: bool) -> None:
        conn, i = http.client.HTTPConnection("127.0.0.1", port, timeout=60), 0
        while not stop.is_set():
            i += 1
            if remembering:
                text = f"client {number} note {i} " + " ".join(
                    WORDS[(i * number + k) % len(WORDS)] for k in range(40)
                )
                status = _post(conn, "/v1/memory/remember", {"scope_id": scope_id, "text": text})
            else:
                query = " ".join(WORDS[(number + k) % len(WORDS)] for k in range(3))
                status = _post(conn, "/v1/context/prepare", {"scope_id": scope_id, "query": query})
            with lock:
                if status != 200:
                    result.failures.append(f"{'remember' if remembering else 'prepare'} {status}")
                elif remembering:
                    result.acknowledged += 1
                else:
                    result.prepared += 1
        conn.close()

    def sampling() -> None:
        while not stop.is_set():
            result.samples.append((time.monotonic() - started, sample()))
            stop.wait(interval)

    threads = [threading.Thread(target=client, args=(n + 1, n < clients)) for n in range(2 * clients)]
    threads.append(threading.Thread(target=sampling))
    for thread in threads:
        thread.start()
    try:
        time.sleep(seconds)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
    return result
