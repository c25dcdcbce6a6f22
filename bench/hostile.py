"""`make bench-hostile`: how fast small hostile requests are refused, and whether /health/live
stays fast meanwhile. Each case froze or crashed the jsonschema validator used before the
generated models (64 KB Scope id: 66 s; 4,000 objects in `show`: 105 s; deep nesting: 500).

Against a real `powercontext serve` on SQLite. For each case: the refusal's status and its
latency (median and max of `ROUNDS`), and the max /health/live latency seen by a second client
polling while the case runs. The baseline is an ordinary invalid request (a missing field).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
from pathlib import Path

from devtools.server_process import Client, ServerProcess

ROUNDS = 20


def cases() -> list[tuple[str, str, bytes, dict[str, str]]]:
    """(name, path, body, extra headers)."""
    nested = "[" * 952 + "]" * 952
    return [
        ("baseline: missing field", "/v1/memory/remember", b'{"scope_id":"a"}', {}),
        (
            "64 KB scope_id ending in /",
            "/v1/memory/remember",
            json.dumps({"scope_id": "a" * 65536 + "/", "text": "x"}).encode(),
            {},
        ),
        (
            "4,000 objects in assembly.show",
            "/v1/context/prepare",
            json.dumps(
                {"scope_id": "a", "query": "q", "assembly": {"show": [{"k": i} for i in range(4000)]}}
            ).encode(),
            {},
        ),
        (
            "nesting depth 952 in assembly.sections",
            "/v1/context/prepare",
            ('{"scope_id":"a","query":"q","assembly":{"sections":' + nested + "}}").encode(),
            {},
        ),
        (
            "Content-Type APPLICATION/JSON, bad body",
            "/v1/context/prepare",
            b'{"scope_id":"a"}',
            {"content-type": "APPLICATION/JSON"},
        ),
    ]


def measure(
    port: int, path: str, body: bytes, headers: dict[str, str], rounds: int
) -> tuple[int, list[float], float]:
    """(status, latencies in ms, max /health/live latency in ms while the case ran)."""
    stop = threading.Event()
    health: list[float] = []

    def poll() -> None:
        client = Client(port)
        while not stop.is_set():
            started = time.perf_counter()
            client.get("/health/live")
            health.append((time.perf_counter() - started) * 1000)
        client.close()

    poller = threading.Thread(target=poll)
    poller.start()
    client = Client(port)
    latencies: list[float] = []
    status = 0
    try:
        for _ in range(rounds):
            started = time.perf_counter()
            status, _ = client.request("POST", path, body, {"content-type": "application/json", **headers})
            latencies.append((time.perf_counter() - started) * 1000)
    finally:
        stop.set()
        poller.join()
        client.close()
    return status, latencies, max(health, default=0.0)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=ROUNDS, help=f"requests per case (default {ROUNDS})")
    rounds = parser.parse_args(argv).rounds
    with tempfile.TemporaryDirectory() as scratch:
        server = ServerProcess(f"sqlite:///{Path(scratch) / 'hostile.sqlite3'}", Path(scratch) / "server.log")
        try:
            print(f"{'case':42} {'status':>6} {'p50 ms':>8} {'max ms':>8} {'health max ms':>14}")
            for name, path, body, headers in cases():
                status, latencies, health = measure(server.port, path, body, headers, rounds)
                print(
                    f"{name:42} {status:>6} {statistics.median(latencies):>8.2f} "
                    f"{max(latencies):>8.2f} {health:>14.2f}"
                )
        finally:
            server.stop()


if __name__ == "__main__":
    main()
