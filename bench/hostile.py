"""`make bench-hostile`: how fast hostile requests are refused, and whether /health/live
stays fast meanwhile. Each early case froze or crashed the jsonschema validator used before the
generated models (64 KB Scope id: 66 s; 4,000 objects in `show`: 105 s; deep nesting: 500); the
later ones are issue 37's: the contract rendered per request (0.25 s of CPU for the YAML, four
callers held /health/live at 1.7 s) and 60,000 unknown keys (0.36 s to refuse, grant or none).

Against a real `powercontext serve` on SQLite that enforces access: requests carry a token with
every grant, except the case sent with a token that has none on its Scope. For each case: the
answer's status and latency (median and max of `ROUNDS` per client, `clients` at once), and the
max /health/live latency seen by another client polling while the case runs. The baseline is an
ordinary invalid request (a missing field).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from devtools.server_process import Client, ServerProcess
from powercontext_runtime import token_digest

ROUNDS = 20
ALL_TOKEN = "hostile-bench-all"
OTHER_TOKEN = "hostile-bench-other"
AUTH_FILE = f"""
[[principal]]
name = "all"
token_sha256 = "{token_digest(ALL_TOKEN)}"
grants = [{{ actions = ["scope.read", "scope.write", "server.admin"], scopes = ["*"] }}]

[[principal]]
name = "other"
token_sha256 = "{token_digest(OTHER_TOKEN)}"
grants = [{{ actions = ["scope.read", "scope.write"], scopes = ["other:*"] }}]
"""


@dataclass(frozen=True)
class Case:
    name: str
    path: str
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    method: str = "POST"
    clients: int = 1


def unknown_keys(count: int, scope_id: str) -> bytes:
    """A remember body with `count` unknown top-level keys (60,000 make about 770 kB)."""
    keys = {f"k{i:05d}": 0 for i in range(count)}
    return json.dumps({"scope_id": scope_id, "text": "x", **keys}, separators=(",", ":")).encode()


def cases() -> list[Case]:
    nested = "[" * 952 + "]" * 952
    flood = unknown_keys(60_000, "project:flood")
    return [
        Case("baseline: missing field", "/v1/memory/remember", b'{"scope_id":"a"}'),
        Case(
            "64 KB scope_id ending in /",
            "/v1/memory/remember",
            json.dumps({"scope_id": "a" * 65536 + "/", "text": "x"}).encode(),
        ),
        Case(
            "4,000 objects in assembly.show",
            "/v1/context/prepare",
            json.dumps(
                {"scope_id": "a", "query": "q", "assembly": {"show": [{"k": i} for i in range(4000)]}}
            ).encode(),
        ),
        Case(
            "nesting depth 952 in assembly.sections",
            "/v1/context/prepare",
            ('{"scope_id":"a","query":"q","assembly":{"sections":' + nested + "}}").encode(),
        ),
        Case(
            "Content-Type APPLICATION/JSON, bad body",
            "/v1/context/prepare",
            b'{"scope_id":"a"}',
            {"content-type": "APPLICATION/JSON"},
        ),
        Case(f"60,000 unknown keys ({len(flood) // 1000} kB)", "/v1/memory/remember", flood),
        Case("60,000 unknown keys, 4 clients", "/v1/memory/remember", flood, clients=4),
        Case(
            "60,000 unknown keys, no grant, 4 clients",
            "/v1/memory/remember",
            flood,
            {"authorization": f"Bearer {OTHER_TOKEN}"},
            clients=4,
        ),
        Case("GET /openapi.yaml, 4 clients, no token", "/openapi.yaml", method="GET", clients=4),
        Case("GET /openapi.json, 4 clients, no token", "/openapi.json", method="GET", clients=4),
    ]


def measure(port: int, case: Case, rounds: int) -> tuple[int, list[float], float]:
    """(last status, latencies in ms, max /health/live latency in ms while the case ran)."""
    stop = threading.Event()
    health: list[float] = []

    def poll() -> None:
        client = Client(port)
        while not stop.is_set():
            started = time.perf_counter()
            client.get("/health/live")
            health.append((time.perf_counter() - started) * 1000)
        client.close()

    latencies: list[float] = []
    statuses: list[int] = []
    headers = {"content-type": "application/json", **case.headers}
    if case.method == "GET":
        headers = {}
    elif "authorization" not in headers:
        headers["authorization"] = f"Bearer {ALL_TOKEN}"

    def send() -> None:
        client = Client(port)
        try:
            for _ in range(rounds):
                started = time.perf_counter()
                status, _ = client.request(case.method, case.path, case.body, headers)
                latencies.append((time.perf_counter() - started) * 1000)
                statuses.append(status)
        finally:
            client.close()

    poller = threading.Thread(target=poll)
    poller.start()
    senders = [threading.Thread(target=send) for _ in range(case.clients)]
    try:
        for sender in senders:
            sender.start()
        for sender in senders:
            sender.join()
    finally:
        stop.set()
        poller.join()
    return statuses[-1], latencies, max(health, default=0.0)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=ROUNDS, help=f"requests per case (default {ROUNDS})")
    rounds = parser.parse_args(argv).rounds
    with tempfile.TemporaryDirectory() as scratch:
        auth = Path(scratch) / "auth.toml"
        auth.write_text(AUTH_FILE, encoding="utf-8")
        server = ServerProcess(
            f"sqlite:///{Path(scratch) / 'hostile.sqlite3'}",
            Path(scratch) / "server.log",
            {"POWERCONTEXT_SERVER_AUTH_FILE": str(auth)},
        )
        try:
            print(f"{'case':42} {'status':>6} {'p50 ms':>8} {'max ms':>8} {'health max ms':>14}")
            for case in cases():
                status, latencies, health = measure(server.port, case, rounds)
                print(
                    f"{case.name:42} {status:>6} {statistics.median(latencies):>8.2f} "
                    f"{max(latencies):>8.2f} {health:>14.2f}"
                )
        finally:
            server.stop()


if __name__ == "__main__":
    main()
