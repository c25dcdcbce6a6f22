"""The Hermes memory provider in-process: cache isolation, frozen turn settings, strict validation, fail-open.

The provider is driven through the hooks Hermes calls (`initialize`, `on_turn_start`, `prefetch`,
`queue_prefetch`); what is checked is what it sends (recorded by a proxy or a scripted server) and
the text it hands back.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from hosts.hermes.powercontext_memory import PROVIDER_NAME, PowerContextMemoryProvider, register
from hosts.hermes.powercontext_memory.cache import cache_key
from hosts.hermes.powercontext_memory.config import SOURCES, load_settings
from tests.hosts.fakes import (
    HangingServer,
    RecordingServer,
    Reply,
    fixed_reply,
    forward_to,
    json_reply,
    unused_port_url,
)

PREPARE = "/v1/context/prepare"
QUERY = "What must run after the zebra gateway API changes?"
TOKEN = "provider-test-secret-token"
SCHEMA = "powercontext.prepared-context.v1"
EMPTY = {"schema": SCHEMA, "status": "empty", "content": None, "content_bytes": 0}
MEMORY_ONE = {"sections": [{"family": "memory", "limit": 1}], "show": ["recall_rank"]}


@pytest.fixture(autouse=True)
def clean_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for env_name, _ in SOURCES.values():
        monkeypatch.delenv(env_name, raising=False)
    monkeypatch.delenv("POWERCONTEXT_HERMES_CONFIG", raising=False)


def configure(monkeypatch: pytest.MonkeyPatch, **values: str | None) -> None:
    """Set (or, with None, unset) provider settings by name: configure(mp, max_bytes="700")."""
    for name, value in values.items():
        env_name = SOURCES[name][0]
        if value is None:
            monkeypatch.delenv(env_name, raising=False)
        else:
            monkeypatch.setenv(env_name, value)


def ready(content: str) -> dict[str, Any]:
    return {"schema": SCHEMA, "status": "ready", "content": content, "content_bytes": len(content.encode())}


@pytest.fixture
def scope_id(http: httpx.Client) -> str:
    scope = f"test:hermes-{uuid.uuid4().hex}"
    assert http.post("/v1/scopes", json={"scope_id": scope, "title": "Zebra"}).status_code == 201
    texts = [
        "After the zebra gateway API changes, run make zebra-contract. " + "Keep the contract pinned. " * 30,
        "Zebra gateway API changes also need make zebra-e2e before release.",
        "Zebra gateway API reviews happen on Tuesdays.",
    ]
    for text in texts:
        assert http.post("/v1/memory/remember", json={"scope_id": scope, "text": text}).status_code == 200
    return scope


@pytest.fixture
def proxy(live_server: str, scope_id: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[RecordingServer]:
    """A recording proxy in front of the live server, configured as the provider's server."""
    with RecordingServer(forward_to(live_server)) as server:
        configure(monkeypatch, base_url=server.base_url, scope=scope_id)
        yield server


def sent(server: RecordingServer) -> list[dict[str, Any]]:
    return [request.json() for request in server.requests_to(PREPARE)]


def server_text(http: httpx.Client, request: dict[str, Any]) -> str:
    body = http.post(PREPARE, json=request).json()
    return "" if body["content"] is None else str(body["content"])


def started(turn: int = 1, session_id: str = "hermes-session") -> PowerContextMemoryProvider:
    provider = PowerContextMemoryProvider()
    provider.initialize(session_id, hermes_home="/nonexistent", platform="cli")
    provider.on_turn_start(turn, QUERY)
    return provider


# Cache isolation


def test_a_repeated_identical_turn_reuses_the_prepared_text(
    proxy: RecordingServer, http: httpx.Client
) -> None:
    provider = started(turn=4)
    first = provider.prefetch(QUERY)
    provider.on_turn_start(4, QUERY)
    assert provider.prefetch(QUERY) == first
    assert len(sent(proxy)) == 1
    assert first == server_text(http, sent(proxy)[0]) != ""


def test_a_changed_max_bytes_never_reuses_text_prepared_under_the_old_budget(
    proxy: RecordingServer, http: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(monkeypatch, assembly="{}")
    provider = started(turn=1)
    large = provider.prefetch(QUERY)
    configure(monkeypatch, max_bytes="900")
    provider.on_turn_start(1, QUERY)  # same turn number and query: only the budget differs
    small = provider.prefetch(QUERY)

    assert [request["max_bytes"] for request in sent(proxy)] == [8000, 900]
    assert small == server_text(http, sent(proxy)[1])
    assert small != large and len(small.encode()) <= 900


def test_a_changed_assembly_never_reuses_text_prepared_under_the_old_one(
    proxy: RecordingServer, http: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    provider = started(turn=2)
    texts = []
    for assembly in ["{}", json.dumps(MEMORY_ONE), None]:
        configure(monkeypatch, assembly=assembly)
        provider.on_turn_start(2, QUERY)  # same turn number and query: only the assembly differs
        texts.append(provider.prefetch(QUERY))

    requests = sent(proxy)
    assert [request.get("assembly") for request in requests] == [{}, MEMORY_ONE, None]
    assert "assembly" not in requests[2]  # legacy: the key is absent, not null
    assert texts == [server_text(http, request) for request in requests]
    assert len(set(texts)) == 3


def test_configuration_is_frozen_from_turn_start_until_the_next_turn(
    proxy: RecordingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    provider = started(turn=1)  # legacy, 8000
    configure(monkeypatch, max_bytes="900", assembly=json.dumps(MEMORY_ONE))
    provider.prefetch(QUERY)
    provider.queue_prefetch(QUERY, session_id="hermes-session")
    provider.on_turn_start(2, QUERY)
    provider.prefetch(QUERY)

    requests = sent(proxy)
    assert requests[0] == {"scope_id": requests[0]["scope_id"], "query": QUERY, "max_bytes": 8000}
    assert requests[1]["max_bytes"] == 900 and requests[1]["assembly"] == MEMORY_ONE
    assert len(requests) == 2


def test_prefetch_and_queue_prefetch_use_the_same_key(proxy: RecordingServer) -> None:
    provider = started(turn=3, session_id="hermes-session")
    provider.queue_prefetch(QUERY, session_id="hermes-session")  # Hermes passes its session id here
    text = provider.prefetch(QUERY)  # ... and an empty one here
    assert text != "" and len(sent(proxy)) == 1

    own = started(turn=3, session_id="")  # no session from Hermes: the provider's own id on both paths
    own.prefetch(QUERY)
    own.queue_prefetch(QUERY)
    assert len(sent(proxy)) == 2


def test_every_part_of_the_request_identity_separates_cache_entries(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = load_settings({"POWERCONTEXT_HERMES_SCOPE": "project:a"})
    base = cache_key(settings, "s", 1, "q")
    variants = [
        cache_key(dataclasses.replace(settings, scope_id="project:b"), "s", 1, "q"),
        cache_key(settings, "t", 1, "q"),
        cache_key(settings, "s", 2, "q"),
        cache_key(settings, "s", 1, "q2"),
        cache_key(dataclasses.replace(settings, max_bytes=7999), "s", 1, "q"),
        cache_key(dataclasses.replace(settings, assembly_json="{}"), "s", 1, "q"),
        cache_key(dataclasses.replace(settings, assembly_json='{"show":[],"sections":[]}'), "s", 1, "q"),
        cache_key(dataclasses.replace(settings, assembly_json='{"sections":[],"show":[]}'), "s", 1, "q"),
    ]
    assert base == cache_key(load_settings({"POWERCONTEXT_HERMES_SCOPE": "project:a"}), "s", 1, "q")
    assert len({base, *variants}) == len(variants) + 1
    assert variants[5].mode == "assembly" and base.mode == "legacy"


# Validation and fail-open


def scripted(monkeypatch: pytest.MonkeyPatch, reply: Reply) -> RecordingServer:
    server = RecordingServer(fixed_reply(reply))
    configure(monkeypatch, base_url=server.base_url, scope="project:zebra", token=TOKEN, max_bytes="512")
    return server


@pytest.mark.parametrize(
    "text",
    ["\n  Zebra — Привет ✓ keep  \n", "x" * 512, "# PowerContext\n\n>     body\n\nEND"],
    ids=["whitespace-and-multibyte", "exactly-max-bytes", "markdown"],
)
def test_valid_content_is_returned_byte_for_byte(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    with scripted(monkeypatch, json_reply(200, ready(text))):
        assert started().prefetch(QUERY) == text


def test_an_empty_result_injects_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    with scripted(monkeypatch, json_reply(200, EMPTY)):
        assert started().prefetch(QUERY) == ""


INVALID = {
    "http-422": json_reply(422, {"error": {"code": "invalid_request", "message": "m", "details": None}}),
    "http-503": json_reply(
        503, {"error": {"code": "retrieval_unavailable", "message": "m", "details": None}}
    ),
    "http-201": json_reply(201, ready("zebra")),
    "not-json": Reply(200, "application/json", b"{not json"),
    "not-an-object": json_reply(200, ["zebra"]),
    "extra-key": json_reply(200, {**ready("zebra"), "items": []}),
    "missing-key": json_reply(200, {k: v for k, v in ready("zebra").items() if k != "content_bytes"}),
    "wrong-schema": json_reply(200, {**ready("zebra"), "schema": "powercontext.prepared-context.v2"}),
    "unknown-status": json_reply(200, {**ready("zebra"), "status": "partial"}),
    "ready-blank": json_reply(200, ready(" \n\t ")),
    "ready-null": json_reply(200, {**ready("zebra"), "content": None}),
    "bytes-mismatch": json_reply(200, {**ready("Привет"), "content_bytes": 6}),
    "bytes-bool": json_reply(200, {**ready("z"), "content_bytes": True}),
    "over-host-budget": json_reply(200, ready("x" * 513)),
    "empty-with-content": json_reply(200, {**EMPTY, "content": "zebra"}),
    "empty-with-bytes": json_reply(200, {**EMPTY, "content_bytes": 1}),
}


@pytest.mark.parametrize("reply", INVALID.values(), ids=INVALID.keys())
def test_every_invalid_answer_fails_open_once_with_one_log_line(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, reply: Reply
) -> None:
    configure(monkeypatch, assembly=json.dumps(MEMORY_ONE))
    with scripted(monkeypatch, reply) as server, caplog.at_level(logging.WARNING):
        provider = started()
        assert provider.prefetch(QUERY) == ""
        provider.queue_prefetch(QUERY, session_id="hermes-session")

    [request] = server.requests_to(PREPARE)  # never retried, in particular not with a relaxed selection
    assert request.json()["assembly"] == MEMORY_ONE
    assert request.headers["Authorization"] == f"Bearer {TOKEN}"
    [record] = caplog.records
    assert TOKEN not in record.getMessage() and QUERY not in record.getMessage()


def test_a_stopped_server_fails_open(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    configure(monkeypatch, base_url=unused_port_url(), token=TOKEN)
    with caplog.at_level(logging.WARNING):
        assert started().prefetch(QUERY) == ""
    [record] = caplog.records
    assert "connection refused" in record.getMessage() and TOKEN not in record.getMessage()


def test_a_hanging_server_is_abandoned_at_the_timeout(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    with HangingServer() as hanging, caplog.at_level(logging.WARNING):
        configure(monkeypatch, base_url=hanging.base_url, token=TOKEN, timeout="0.3")
        began = time.monotonic()
        assert started().prefetch(QUERY) == ""
        assert time.monotonic() - began < 1.5
    [record] = caplog.records
    assert "timed out" in record.getMessage() and TOKEN not in record.getMessage()


def test_a_redirect_is_not_followed(monkeypatch: pytest.MonkeyPatch) -> None:
    with RecordingServer(fixed_reply(json_reply(200, ready("elsewhere")))) as elsewhere:
        redirect = Reply(307, "text/plain", b"", {"Location": elsewhere.base_url + PREPARE})
        with RecordingServer(fixed_reply(redirect)) as server:
            configure(monkeypatch, base_url=server.base_url, token=TOKEN)
            assert started().prefetch(QUERY) == ""
            assert len(server.received) == 1
        assert elsewhere.received == []


def test_an_invalid_setting_sends_nothing_and_injects_nothing(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    with RecordingServer(fixed_reply(json_reply(200, ready("zebra")))) as server:
        configure(monkeypatch, base_url=server.base_url, max_bytes="40000")
        with caplog.at_level(logging.WARNING):
            assert PowerContextMemoryProvider().is_available() is False
            assert started().prefetch(QUERY) == ""
        assert server.received == []
    assert all("MAX_BYTES" in record.getMessage() for record in caplog.records)


def test_a_blank_query_sends_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    with scripted(monkeypatch, json_reply(200, ready("zebra"))) as server:
        assert started().prefetch("  \n") == ""
        assert server.received == []


def test_register_adds_one_context_only_provider() -> None:
    registered: list[Any] = []

    class Context:
        def register_memory_provider(self, provider: Any) -> None:
            registered.append(provider)

    register(Context())
    [provider] = registered
    assert provider.name == PROVIDER_NAME == "powercontext"
    assert provider.get_tool_schemas() == [] and provider.is_available() is True
