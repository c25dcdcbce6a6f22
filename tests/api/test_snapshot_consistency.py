"""Prepare and search read one consistent snapshot while entries are being revised.

Eight entries always have exactly one active version each: two threads keep revising them while
readers prepare (legacy and assembled) and search. Every answer must show all eight, each at a
version no older than the one acknowledged before the request began. Run on both backends, in one
process with a thread pool, with two workers, and with two server processes on one database (each
process keeps its own search mirror, fed by the shared index log).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from devtools.server_process import ServerProcess

from ..conftest import database_env
from .helpers import new_scope, remember

SLOTS = 8
REVISERS = 2
READERS = 6
DURATION_S = 6.0
# Each body names its slot and revision, so an answer shows both whatever its format.
SHOWN = re.compile(r"otter slot (\d+) rev (\d+)")


def body(slot: int, revision: int) -> str:
    return f"otter slot {slot} rev {revision}"


class Revisions:
    """The newest acknowledged revision of each slot, and what readers saw wrong."""

    def __init__(self, citations: dict[int, dict[str, Any]]) -> None:
        self.lock = threading.Lock()
        self.citations = citations
        self.acknowledged = dict.fromkeys(citations, 0)
        self.failures: list[str] = []
        self.answers = 0

    def check(self, what: str, started: dict[int, int], texts: list[str]) -> None:
        seen: dict[int, int] = {}
        for text in texts:
            for slot, revision in SHOWN.findall(text):
                seen[int(slot)] = max(seen.get(int(slot), -1), int(revision))
        with self.lock:
            self.answers += 1
            missing = sorted(set(started) - set(seen))
            stale = sorted(slot for slot in seen if seen[slot] < started[slot])
            if missing or stale:
                self.failures.append(f"{what}: missing {missing}, stale {stale}")


def run_load(urls: list[str], scope_id: str, revisions: Revisions) -> None:
    deadline = time.monotonic() + DURATION_S

    def reviser(first: int) -> None:
        with httpx.Client(base_url=urls[first % len(urls)], timeout=30) as client:
            slot = first
            while time.monotonic() < deadline:
                with revisions.lock:
                    citation = revisions.citations[slot]
                    revision = revisions.acknowledged[slot] + 1
                response = client.post(
                    "/v1/memory/entries/revise",
                    json={"scope_id": scope_id, "citation": citation, "text": body(slot, revision)},
                )
                assert response.status_code == 200, response.text
                with revisions.lock:
                    revisions.citations[slot] = response.json()["citation"]
                    revisions.acknowledged[slot] = revision
                slot = (slot + REVISERS) % SLOTS  # each reviser owns its slots: no 409 races

    def reader(n: int) -> None:
        with httpx.Client(base_url=urls[n % len(urls)], timeout=30) as client:
            while time.monotonic() < deadline:
                with revisions.lock:
                    started = dict(revisions.acknowledged)
                if n % 3 == 2:
                    response = client.post(
                        "/v1/memory/search",
                        json={"scope_id": scope_id, "query": "otter slot", "limit": SLOTS},
                    )
                    assert response.status_code == 200, response.text
                    texts = [hit["text"] for hit in response.json()["hits"]]
                    revisions.check("search", started, texts)
                    continue
                request: dict[str, Any] = {"scope_id": scope_id, "query": "otter slot", "max_bytes": 32768}
                if n % 3 == 1:
                    request["assembly"] = {"sections": [{"family": "memory", "limit": SLOTS}]}
                response = client.post("/v1/context/prepare", json=request)
                assert response.status_code == 200, response.text
                kind = "assembled prepare" if "assembly" in request else "legacy prepare"
                revisions.check(kind, started, [response.json()["content"] or ""])

    threads = [threading.Thread(target=reviser, args=(i,)) for i in range(REVISERS)]
    threads += [threading.Thread(target=reader, args=(i,)) for i in range(READERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=DURATION_S + 60)
    assert not any(thread.is_alive() for thread in threads)


def seeded(url: str) -> tuple[str, Revisions]:
    with httpx.Client(base_url=url, timeout=30) as client:
        scope_id = new_scope(client)
        citations = {slot: remember(client, scope_id, body(slot, 0))["citation"] for slot in range(SLOTS)}
    return scope_id, Revisions(citations)


def assert_consistent(revisions: Revisions) -> None:
    assert revisions.answers > 0
    assert revisions.failures == [], (
        f"{len(revisions.failures)} of {revisions.answers}: {revisions.failures[:5]}"
    )


def test_one_process_never_misses_or_shows_stale_versions(start_server: Callable[..., Any]) -> None:
    server = start_server()
    scope_id, revisions = seeded(server.base_url)
    run_load([server.base_url], scope_id, revisions)
    assert_consistent(revisions)


@pytest.mark.parametrize("layout", ["two workers", "two processes"])
def test_several_processes_never_miss_or_show_stale_versions(
    layout: str, backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    url = database_env(request, backend).get(
        "POWERCONTEXT_SERVER_DATABASE_URL", f"sqlite:///{tmp_path / 'powercontext.sqlite3'}"
    )
    workers = {"POWERCONTEXT_SERVER_WORKERS": "2"} if layout == "two workers" else {}
    servers = [ServerProcess(url, tmp_path / "server-0.log", workers)]
    if layout == "two processes":
        servers.append(ServerProcess(url, tmp_path / "server-1.log"))
    try:
        urls = [f"http://127.0.0.1:{server.port}" for server in servers]
        scope_id, revisions = seeded(urls[0])
        run_load(urls, scope_id, revisions)
    finally:
        for server in servers:
            server.stop()
    assert_consistent(revisions)
