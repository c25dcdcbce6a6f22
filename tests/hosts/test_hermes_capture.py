"""Capture of completed turns, in-process: the queue, its worker and the provider's `sync_turn`.

Turns go through the hooks Hermes calls (`initialize`, `on_turn_start`, `sync_turn`,
`on_session_end`, `shutdown`); what is checked is what reaches a real server (directly or through a
recording proxy), or a scripted one, and the provider's counters. The queue's own bounds are
checked with a sender the test controls.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

import httpx
import pytest

from hosts.hermes.powercontext_memory import PowerContextMemoryProvider
from hosts.hermes.powercontext_memory._core.entries import KIND
from hosts.hermes.powercontext_memory._core.redact import MARKER
from hosts.hermes.powercontext_memory._core.remember import Destination, MemoryWriter, WriteFailure, Written
from hosts.hermes.powercontext_memory.capture import CaptureQueue, CaptureStats, PendingTurn
from hosts.hermes.powercontext_memory.config import ENV_CONFIG_FILE, SOURCES
from hosts.hermes.powercontext_memory.turns import TurnCapture
from tests.hosts.fakes import (
    HangingServer,
    Received,
    RecordingServer,
    Reply,
    batch_stored,
    delayed,
    error_reply,
    forward_to,
    json_reply,
    scripted_paths,
    unused_port_url,
)

BATCH = "/v1/memory/remember/batch"
SCOPES = "/v1/scopes"
TOKEN = "capture-test-secret-token"
SESSION = "20260522_101500_ab12cd"
USER = "My locker code is 4471 and the tide-pool survey is on Thursday."
ASSISTANT = "Noted: locker 4471, tide-pool survey on Thursday."
PROMPTLY = 0.5  # seconds sync_turn may take at most, whatever the server does


@pytest.fixture(autouse=True)
def clean_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for env_name, _ in SOURCES.values():
        monkeypatch.delenv(env_name, raising=False)
    monkeypatch.delenv(ENV_CONFIG_FILE, raising=False)


def configure(monkeypatch: pytest.MonkeyPatch, **values: str) -> None:
    """Set provider settings by name: configure(mp, scope="project:x", capture="off")."""
    for name, value in values.items():
        monkeypatch.setenv(SOURCES[name][0], value)


def writer_queue(timeout: float = 5.0, **bounds: int) -> CaptureQueue:
    writer = MemoryWriter(timeout=timeout)
    return CaptureQueue(lambda destination, texts: writer.remember(destination, texts, KIND), **bounds)


def provider_with(queue: CaptureQueue | None = None, **init: Any) -> PowerContextMemoryProvider:
    provider = PowerContextMemoryProvider(TurnCapture(queue or writer_queue()))
    provider.initialize(SESSION, hermes_home="/nonexistent", platform="cli", **init)
    provider.on_turn_start(1, USER)
    return provider


def entries(http: httpx.Client, scope_id: str) -> list[dict[str, Any]]:
    response = http.post("/v1/memory/entries/list", json={"scope_id": scope_id, "limit": 200})
    assert response.status_code == 200, response.text
    return list(response.json()["entries"])


def sync(provider: PowerContextMemoryProvider, user: str = USER, assistant: str = ASSISTANT) -> float:
    """Run sync_turn as Hermes does; the seconds it took."""
    began = time.monotonic()
    provider.sync_turn(user, assistant, session_id=SESSION, messages=[])
    return time.monotonic() - began


@pytest.fixture
def scope_id(fresh_scope: str, live_server: str, monkeypatch: pytest.MonkeyPatch) -> str:
    configure(monkeypatch, base_url=live_server, scope=fresh_scope)
    return fresh_scope


@pytest.fixture
def proxy(live_server: str, scope_id: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[RecordingServer]:
    with RecordingServer(forward_to(live_server)) as server:
        configure(monkeypatch, base_url=server.base_url, token=TOKEN)
        yield server


# Delivery to a real server


def test_a_turn_is_stored_as_one_conversation_entry(
    proxy: RecordingServer, http: httpx.Client, scope_id: str
) -> None:
    provider = provider_with()
    assert sync(provider) < PROMPTLY
    provider.shutdown()

    [request] = proxy.requests_to(BATCH)
    assert request.headers["Authorization"] == f"Bearer {TOKEN}"
    [entry] = entries(http, scope_id)
    assert entry["kind"] == KIND == "conversation"
    header, body = entry["text"].split("\n", 1)
    assert header.startswith(f"[Hermes conversation | session {SESSION} | 20")
    assert header.endswith("Z]")
    assert body == f"User: {USER}\n\nAssistant: {ASSISTANT}"
    assert provider.capture_stats() == CaptureStats(queued=1, stored=1)


def test_secrets_are_redacted_before_anything_is_sent(
    proxy: RecordingServer, http: httpx.Client, scope_id: str
) -> None:
    provider = provider_with()
    sync(
        provider,
        "Deploy with OPENAI_API_KEY=sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z to postgres://app:Hunter2x@db/app",
        "Done; I used Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.e30.c2ln for the call.",
    )
    provider.shutdown()

    sent = proxy.requests_to(BATCH)[0].body.decode()
    for secret in ("sk-proj-Ab3d", "Hunter2x", "eyJhbGciOiJIUzI1NiJ9"):
        assert secret not in sent
    [entry] = entries(http, scope_id)
    assert f"OPENAI_API_KEY={MARKER}" in entry["text"]
    assert f"postgres://app:{MARKER}@db/app" in entry["text"]
    assert f"Authorization: Bearer {MARKER}" in entry["text"]


def test_empty_and_repeated_turns_are_skipped(
    proxy: RecordingServer, http: httpx.Client, scope_id: str
) -> None:
    provider = provider_with()
    sync(provider, "", "")
    sync(provider, "  \n", "\t")
    sync(provider, "<memory-context>recalled only</memory-context>", "")
    sync(provider)
    sync(provider)  # the same turn again
    sync(provider, f"  {USER}\n", ASSISTANT.replace(" ", "  "))  # only whitespace differs
    provider.on_session_switch("another-session")
    sync(provider)  # captured already by this provider, in another session
    sync(provider, USER, "A different answer.")
    provider.shutdown()

    texts = [entry["text"] for entry in entries(http, scope_id)]
    assert len(texts) == 2
    assert texts[1].endswith("Assistant: A different answer.")
    assert provider.capture_stats() == CaptureStats(queued=2, stored=2, skipped=6)


def test_shutdown_flush_delivers_every_queued_turn_in_batches(
    live_server: str, scope_id: str, http: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    with RecordingServer(delayed(forward_to(live_server), 0.4)) as slow:
        configure(monkeypatch, base_url=slow.base_url)
        provider = provider_with()
        for number in range(5):
            assert sync(provider, f"Question {number} about zebras?", f"Answer {number}.") < PROMPTLY
        assert entries(http, scope_id) == []  # still queued or in flight
        began = time.monotonic()
        provider.shutdown()
        assert time.monotonic() - began < 5

    texts = [entry["text"] for entry in entries(http, scope_id)]
    assert [text.rsplit("Answer ", 1)[1] for text in texts] == ["0.", "1.", "2.", "3.", "4."]
    batches = slow.requests_to(BATCH)
    assert 1 <= len(batches) < 5  # turns that queued up behind a request went out together
    assert sum(len(request.json()["entries"]) for request in batches) == 5
    assert provider.capture_stats() == CaptureStats(queued=5, stored=5)


def test_session_end_flushes_without_closing(
    live_server: str, scope_id: str, http: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    with RecordingServer(delayed(forward_to(live_server), 0.3)) as slow:
        configure(monkeypatch, base_url=slow.base_url)
        provider = provider_with()
        sync(provider)
        provider.on_session_end([])
        assert len(entries(http, scope_id)) == 1
        sync(provider, "And one more thing?", "Sure.")  # the provider keeps capturing
        provider.shutdown()
    assert len(entries(http, scope_id)) == 2


def test_a_missing_scope_is_created(
    live_server: str, http: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    scope_id = f"test:capture-{uuid.uuid4().hex}"
    configure(monkeypatch, base_url=live_server, scope=scope_id)
    provider = provider_with()
    sync(provider)
    provider.shutdown()

    assert http.get(f"/v1/scopes/{scope_id}").status_code == 200
    assert len(entries(http, scope_id)) == 1
    assert provider.capture_stats().stored == 1


# Fail-open


def test_capture_off_sends_nothing(proxy: RecordingServer, monkeypatch: pytest.MonkeyPatch) -> None:
    configure(monkeypatch, capture="off")
    provider = provider_with()
    sync(provider)
    provider.shutdown()
    assert proxy.requests_to(BATCH) == []
    assert provider.capture_stats() == CaptureStats()


@pytest.mark.parametrize("context", ["cron", "subagent", "flush"])
def test_only_the_primary_agent_captures(
    proxy: RecordingServer, context: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    provider = provider_with(agent_context=context)
    sync(provider)
    provider.shutdown()
    assert proxy.requests_to(BATCH) == []


def test_invalid_settings_capture_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    with RecordingServer(batch_stored) as server:
        configure(monkeypatch, base_url=server.base_url, max_bytes="1")
        provider = provider_with()
        sync(provider)
        provider.shutdown()
        assert server.received == []


def test_a_stopped_server_fails_open_and_counts_the_lost_entries(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    configure(monkeypatch, base_url=unused_port_url(), token=TOKEN, scope="project:zebra")
    provider = provider_with()
    with caplog.at_level(logging.WARNING):
        assert sync(provider) < PROMPTLY
        provider.shutdown()
    assert provider.capture_stats() == CaptureStats(queued=1, failed=1)
    [record] = caplog.records
    assert "connection refused" in record.getMessage()
    assert_log_safe(caplog)


def test_a_hanging_server_never_holds_up_a_turn_and_shutdown_is_bounded(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    with HangingServer() as hanging, caplog.at_level(logging.WARNING):
        configure(monkeypatch, base_url=hanging.base_url, token=TOKEN, scope="project:zebra")
        provider = provider_with(writer_queue(timeout=0.5))
        assert sync(provider) < PROMPTLY
        assert sync(provider, "Second question?", "Second answer.") < PROMPTLY
        began = time.monotonic()
        provider.shutdown()
        assert time.monotonic() - began < 3
    stats = provider.capture_stats()
    assert stats.queued == 2 and stats.stored == 0 and stats.failed == 2
    assert all("timed out" in record.getMessage() for record in caplog.records)
    assert_log_safe(caplog)


def test_a_full_queue_drops_the_turn_and_counts_it(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    gate = threading.Event()

    def stuck(request: Received) -> Reply:
        gate.wait(10)
        return batch_stored(request)

    with RecordingServer(stuck) as server:
        configure(monkeypatch, base_url=server.base_url, scope="project:zebra")
        provider = provider_with(writer_queue(max_turns=1))
        with caplog.at_level(logging.WARNING):
            durations = [sync(provider, "Question 0?", "Answer 0.")]
            wait_until(lambda: len(server.received) == 1)  # turn 0 is in flight
            durations += [sync(provider, f"Question {n}?", f"Answer {n}.") for n in range(1, 5)]
        assert max(durations) < PROMPTLY
        gate.set()
        provider.shutdown()

    assert provider.capture_stats() == CaptureStats(queued=2, stored=2, dropped=3)
    drops = [record for record in caplog.records if "queue is full" in record.getMessage()]
    assert len(drops) == 3


def test_an_unexpected_error_in_sync_turn_is_counted_not_raised(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(text: str) -> str:
        raise RuntimeError(f"boom {text}")

    monkeypatch.setattr("hosts.hermes.powercontext_memory.turns.clean", broken)
    configure(monkeypatch, base_url=unused_port_url(), scope="project:zebra")
    provider = provider_with()
    with caplog.at_level(logging.WARNING):
        sync(provider)
    assert provider.capture_stats() == CaptureStats(errors=1)
    [record] = caplog.records
    assert USER not in record.getMessage() and "RuntimeError" in record.getMessage()


# Scope creation refused or raced (scripted server)


def test_refused_scope_creation_is_logged_once_and_capture_goes_on(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    missing = error_reply(404, "scope_not_found")
    responder = scripted_paths(
        {BATCH: [lambda _: missing], SCOPES: [lambda _: error_reply(403, "forbidden")]}
    )
    with RecordingServer(responder) as server, caplog.at_level(logging.WARNING):
        configure(monkeypatch, base_url=server.base_url, token=TOKEN, scope="project:zebra")
        provider = provider_with()
        assert sync(provider) < PROMPTLY
        provider.on_session_end([])
        assert sync(provider, "Another question?", "Another answer.") < PROMPTLY
        provider.shutdown()

    assert [request.path for request in server.received] == [BATCH, SCOPES, BATCH]
    assert server.requests_to(SCOPES)[0].json() == {"scope_id": "project:zebra"}
    assert provider.capture_stats() == CaptureStats(queued=2, failed=2)
    refusals = [record for record in caplog.records if "may not create" in record.getMessage()]
    assert len(refusals) == 1
    assert_log_safe(caplog)


def test_a_scope_created_meanwhile_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    missing = error_reply(404, "scope_not_found")
    responder = scripted_paths(
        {BATCH: [lambda _: missing, batch_stored], SCOPES: [lambda _: error_reply(409, "scope_exists")]}
    )
    with RecordingServer(responder) as server:
        configure(monkeypatch, base_url=server.base_url, scope="project:zebra")
        provider = provider_with()
        sync(provider)
        provider.shutdown()
    assert [request.path for request in server.received] == [BATCH, SCOPES, BATCH]
    assert provider.capture_stats() == CaptureStats(queued=1, stored=1)


def test_an_old_server_without_batch_is_not_asked_to_create_scopes(monkeypatch: pytest.MonkeyPatch) -> None:
    with RecordingServer(lambda _: error_reply(404, "not_found")) as server:
        configure(monkeypatch, base_url=server.base_url, scope="project:zebra")
        provider = provider_with()
        sync(provider)
        provider.shutdown()
    assert [request.path for request in server.received] == [BATCH]
    assert provider.capture_stats().failed == 1


def test_a_malformed_answer_counts_as_failed(monkeypatch: pytest.MonkeyPatch) -> None:
    with RecordingServer(lambda _: json_reply(200, {"citations": []})) as server:
        configure(monkeypatch, base_url=server.base_url, scope="project:zebra")
        provider = provider_with()
        sync(provider)
        provider.shutdown()
    assert provider.capture_stats() == CaptureStats(queued=1, failed=1)


# The queue on its own

DESTINATION = Destination("http://127.0.0.1:9", None, "project:zebra")


class GatedSender:
    """Records what it is asked to send; blocks until `gate` is set."""

    def __init__(self, fail: bool = False) -> None:
        self.gate = threading.Event()
        self.calls: list[list[str]] = []
        self.fail = fail

    def __call__(self, destination: Destination, texts: Sequence[str]) -> Written:
        self.calls.append(list(texts))
        self.gate.wait(10)
        if self.fail:
            raise WriteFailure("HTTP 503 retrieval_unavailable", 503, "retrieval_unavailable")
        return Written(len(texts))


def turn(*texts: str, destination: Destination = DESTINATION) -> PendingTurn:
    return PendingTurn(destination, texts)


def test_the_queue_is_bounded_and_never_blocks() -> None:
    sender = GatedSender()
    queue = CaptureQueue(sender, max_turns=2)
    assert queue.submit(turn("t0"))
    wait_until(lambda: len(sender.calls) == 1)  # t0 is in flight
    began = time.monotonic()
    results = [queue.submit(turn(f"t{n}")) for n in range(1, 5)]
    assert time.monotonic() - began < 0.1
    assert results == [True, True, False, False]
    assert queue.stats().dropped == 2
    sender.gate.set()
    assert queue.flush(5)
    assert sender.calls == [["t0"], ["t1", "t2"]]  # the two that waited went out as one batch
    assert queue.stats() == CaptureStats(queued=3, stored=3, dropped=2)


def test_batches_respect_entry_and_byte_bounds_and_destinations() -> None:
    sender = GatedSender()
    queue = CaptureQueue(sender, max_batch_entries=3, max_batch_bytes=1000)
    other = Destination("http://127.0.0.1:9", None, "project:other")
    queue.submit(turn("first"))
    wait_until(lambda: len(sender.calls) == 1)  # the rest queue up behind this request
    pending = [
        turn("a", "b"),
        turn("c"),
        turn("d"),
        turn("e", destination=other),
        turn("y" * 500),
        turn("z" * 500),
    ]
    for item in pending:
        queue.submit(item)
    sender.gate.set()
    assert queue.flush(5)
    # 3 entries at most; another Scope breaks the batch; two 500-char texts exceed 1000 bytes.
    assert sender.calls == [["first"], ["a", "b", "c"], ["d"], ["e"], ["y" * 500], ["z" * 500]]


def test_a_turn_larger_than_one_batch_is_sent_in_several_requests() -> None:
    sender = GatedSender()
    sender.gate.set()
    queue = CaptureQueue(sender, max_batch_entries=2)
    queue.submit(turn("p1", "p2", "p3", "p4", "p5"))
    assert queue.flush(5)
    assert sender.calls == [["p1", "p2"], ["p3", "p4"], ["p5"]]


def test_close_waits_a_bounded_time_then_abandons_what_is_left() -> None:
    sender = GatedSender()
    queue = CaptureQueue(sender)
    queue.submit(turn("t0"))
    wait_until(lambda: len(sender.calls) == 1)
    queue.submit(turn("t1"))
    queue.submit(turn("t2"))
    began = time.monotonic()
    assert queue.close(0.3) is False
    assert 0.25 < time.monotonic() - began < 1.5
    assert queue.stats().dropped == 2  # t0 was in flight; t1 and t2 were still queued
    sender.gate.set()
    assert queue.flush(5)
    assert queue.stats() == CaptureStats(queued=3, stored=1, dropped=2)


def test_a_failed_request_loses_only_its_entries_and_the_worker_goes_on() -> None:
    sender = GatedSender(fail=True)
    sender.gate.set()
    queue = CaptureQueue(sender)
    queue.submit(turn("a", "b"))
    assert queue.flush(5)
    sender.fail = False
    queue.submit(turn("c"))
    assert queue.flush(5)
    assert queue.stats() == CaptureStats(queued=2, stored=1, failed=2)


def test_a_queue_accepts_turns_again_after_close() -> None:
    sender = GatedSender()
    sender.gate.set()
    queue = CaptureQueue(sender)
    queue.submit(turn("a"))
    assert queue.close(5)
    queue.submit(turn("b"))
    assert queue.flush(5)
    assert sender.calls == [["a"], ["b"]]


# Helpers


def wait_until(condition: Any, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.01)


def assert_log_safe(caplog: pytest.LogCaptureFixture) -> None:
    for record in caplog.records:
        message = record.getMessage()
        assert TOKEN not in message and "4471" not in message and "Second question" not in message
