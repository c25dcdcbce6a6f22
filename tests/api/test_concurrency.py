"""8 writers and 8 preparers for 10 seconds on each backend: nothing lost, nothing doubled, no 5xx.

Writers remember new entries and race to revise the same few heads; a lost race must be a 409.
Afterwards every acknowledged write reads back by its exact citation, and every acknowledged
revision number is unique.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from typing import Any

import httpx

from .helpers import new_scope, remember

DURATION_S = 10.0  # every second brings many racing revisions; the suite's run time counts too
WRITERS = 8
PREPARERS = 8


def test_concurrent_writers_and_preparers_lose_nothing(start_server: Any) -> None:
    server = start_server()
    with httpx.Client(base_url=server.base_url, timeout=30) as setup:
        scope_id = new_scope(setup)
        heads = {i: remember(setup, scope_id, f"shared head {i} otter")["citation"] for i in range(4)}
    lock = threading.Lock()
    acknowledged: list[tuple[dict[str, Any], str]] = []
    statuses: Counter[int] = Counter()
    deadline = time.monotonic() + DURATION_S

    def writer(seed: int) -> None:
        rng = random.Random(seed)
        with httpx.Client(base_url=server.base_url, timeout=30) as client:
            n = 0
            while time.monotonic() < deadline:
                n += 1
                text = f"writer {seed} note {n} otter"
                if rng.random() < 0.5:
                    response = client.post("/v1/memory/remember", json={"scope_id": scope_id, "text": text})
                else:
                    slot = rng.randrange(len(heads))
                    with lock:
                        citation = heads[slot]
                    response = client.post(
                        "/v1/memory/entries/revise",
                        json={"scope_id": scope_id, "citation": citation, "text": text},
                    )
                    if response.status_code == 200:
                        with lock:
                            heads[slot] = response.json()["citation"]
                with lock:
                    statuses[response.status_code] += 1
                    if response.status_code == 200:
                        acknowledged.append((response.json()["citation"], text))

    def preparer(seed: int) -> None:
        with httpx.Client(base_url=server.base_url, timeout=30) as client:
            while time.monotonic() < deadline:
                body: dict[str, Any] = {"scope_id": scope_id, "query": f"otter note {seed}"}
                if seed % 2:
                    body["assembly"] = {}
                response = client.post("/v1/context/prepare", json=body)
                payload = response.json()
                if response.status_code == 200 and payload["content"] is not None:
                    assert payload["content_bytes"] == len(payload["content"].encode("utf-8"))
                with lock:
                    statuses[response.status_code] += 1

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(WRITERS)]
    threads += [threading.Thread(target=preparer, args=(i,)) for i in range(PREPARERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=DURATION_S + 60)
    assert not any(thread.is_alive() for thread in threads)

    assert set(statuses) <= {200, 409}, statuses
    assert statuses[200] > 0 and acknowledged
    revisions = [citation["memory_ref"]["revision"] for citation, _ in acknowledged]
    assert len(set(revisions)) == len(revisions), "two acknowledged writes share a revision"
    with httpx.Client(base_url=server.base_url, timeout=30) as client:
        for citation, text in acknowledged:
            exact = client.post("/v1/memory/entries/get", json={"scope_id": scope_id, "citation": citation})
            assert exact.status_code == 200 and exact.json()["text"] == text
