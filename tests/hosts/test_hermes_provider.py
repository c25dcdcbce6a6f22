"""The Hermes memory provider in-process: cache isolation, frozen turn settings, the capabilities
check before assembly, Hermes's call order, strict validation, fail-open.

The provider is driven through the hooks Hermes calls (`initialize`, `on_turn_start`, `prefetch`,
`sync_turn`, `queue_prefetch`); what is checked is what it sends (recorded by a proxy or a scripted
server) and the text it hands back.
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
from powercontext_host._contract import HOST_DEFAULT_ASSEMBLY
from tests.hosts.fakes import (
    HangingServer,
    Received,
    RecordingServer,
    Reply,
    Responder,
    delayed,
    error_reply,
    fixed_reply,
    forward_to,
    json_reply,
    scripted_paths,
    unused_port_url,
)

PREPARE = "/v1/context/prepare"
CAPABILITIES = "/v1/capabilities"
QUERY = "What must run after the zebra gateway API changes?"
TOKEN = "provider-test-secret-token"
SCHEMA = "powercontext.prepared-context.v1"
EMPTY = {"schema": SCHEMA, "status": "empty", "content": None, "content_bytes": 0}
HOST_DEFAULT = json.loads(HOST_DEFAULT_ASSEMBLY)
MEMORY_ONE = {"sections": [{"family": "memory", "limit": 1}], "show": ["recall_rank"]}
# The RFC's defaults written out, with object keys in another order at every level.
DEFAULTS_SHUFFLED = (
    '{"show": [], "sections": [{"limit": 6, "family": "memory"}, {"limit": 2, "family": "experience"}],'
    ' "format": "markdown"}'
)


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


def capabilities(assembly: bool) -> dict[str, Any]:
    """A complete `Capabilities` answer (openapi/powercontext.yaml)."""
    prepare = {
        "legacy": True,
        "assembly": assembly,
        "schema": SCHEMA,
        "min_max_bytes": 512,
        "max_max_bytes": 32768,
        "default_max_bytes": 8000,
        "assembly_families": ["memory", "experience", "profile", "topic-memory"],
        "assembly_formats": ["markdown"],
        "assembly_max_entries": 8,
    }
    return {"api_version": "v1", "families": ["memory", "experience"], "prepare": prepare}


SUPPORTED = json_reply(200, capabilities(True))


def paths(server: RecordingServer) -> list[str]:
    return [request.path for request in server.received]


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
    for assembly in ["{}", json.dumps(MEMORY_ONE), "legacy", None]:
        configure(monkeypatch, assembly=assembly)
        provider.on_turn_start(2, QUERY)  # same turn number and query: only the assembly differs
        texts.append(provider.prefetch(QUERY))

    requests = sent(proxy)
    assert [request.get("assembly") for request in requests] == [{}, MEMORY_ONE, None, HOST_DEFAULT]
    assert "assembly" not in requests[2]  # legacy: the key is absent, not null
    assert texts == [server_text(http, request) for request in requests]
    assert len(set(texts[:3])) == 3 and texts[3] != texts[2]


def test_configuration_is_frozen_from_turn_start_until_the_next_turn(
    proxy: RecordingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(monkeypatch, assembly="legacy")
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
    # queue_prefetch also used turn 1's (legacy) snapshot: the capabilities check came with turn 2.
    assert paths(proxy) == [PREPARE, CAPABILITIES, PREPARE]


def test_queue_prefetch_never_prepares_and_a_repeated_prefetch_reuses_the_text(
    proxy: RecordingServer,
) -> None:
    provider = started(turn=3, session_id="hermes-session")
    provider.queue_prefetch(QUERY, session_id="hermes-session")  # Hermes passes its session id here
    assert sent(proxy) == []
    text = provider.prefetch(QUERY)  # ... and an empty one here
    provider.queue_prefetch(QUERY, session_id="hermes-session")
    assert provider.prefetch(QUERY) == text != "" and len(sent(proxy)) == 1

    own = started(turn=3, session_id="")  # no session from Hermes: the provider's own id
    own.prefetch(QUERY)
    own.queue_prefetch(QUERY)
    own.prefetch(QUERY)
    assert len(sent(proxy)) == 2


def test_every_part_of_the_request_identity_separates_cache_entries() -> None:
    settings = load_settings({"POWERCONTEXT_HERMES_SCOPE": "project:a"})
    base = cache_key(settings, "s", 1, "q")
    experience_first = '{"sections":[{"family":"experience","limit":2},{"family":"memory","limit":6}]}'
    variants = [
        cache_key(dataclasses.replace(settings, scope_id="project:b"), "s", 1, "q"),
        cache_key(settings, "t", 1, "q"),
        cache_key(settings, "s", 2, "q"),
        cache_key(settings, "s", 1, "q2"),
        cache_key(dataclasses.replace(settings, max_bytes=7999), "s", 1, "q"),
        cache_key(dataclasses.replace(settings, base_url="http://127.0.0.1:8001"), "s", 1, "q"),
        cache_key(dataclasses.replace(settings, assembly_json="{}"), "s", 1, "q"),
        cache_key(dataclasses.replace(settings, assembly_json='{"sections":[]}'), "s", 1, "q"),
        cache_key(dataclasses.replace(settings, assembly_json=experience_first), "s", 1, "q"),
        cache_key(dataclasses.replace(settings, assembly_json='{"show":["recall_rank"]}'), "s", 1, "q"),
    ]
    assert base == cache_key(load_settings({"POWERCONTEXT_HERMES_SCOPE": "project:a"}), "s", 1, "q")
    assert len({base, *variants}) == len(variants) + 1
    assert variants[6].mode == "assembly" and base.mode == "assembly"
    legacy = cache_key(dataclasses.replace(settings, assembly_json=None), "s", 1, "q")
    assert legacy.mode == "legacy" and legacy not in {base, *variants}


EQUIVALENT_TO_EMPTY = {
    "explicit-defaults": '{"format":"markdown","sections":[{"family":"memory","limit":6},'
    '{"family":"experience","limit":2}],"show":[]}',
    "keys-shuffled-at-every-level": DEFAULTS_SHUFFLED,
    "only-show": '{"show":[]}',
    "only-format": '{"format":"markdown"}',
    "only-sections": '{"sections":[{"limit":6,"family":"memory"},{"family":"experience","limit":2}]}',
}


@pytest.mark.parametrize("assembly", EQUIVALENT_TO_EMPTY.values(), ids=EQUIVALENT_TO_EMPTY.keys())
def test_the_cache_key_holds_the_effective_assembly(assembly: str) -> None:
    settings = load_settings({"POWERCONTEXT_HERMES_CONTEXT_ASSEMBLY": "{}"})
    same = load_settings({"POWERCONTEXT_HERMES_CONTEXT_ASSEMBLY": assembly})
    assert same.assembly_json != settings.assembly_json  # configured differently ...
    assert cache_key(same, "s", 1, "q") == cache_key(settings, "s", 1, "q")  # ... and the same key


def test_key_order_never_matters_but_section_order_does() -> None:
    def key(assembly: object) -> object:
        env = {"POWERCONTEXT_HERMES_CONTEXT_ASSEMBLY": json.dumps(assembly)}
        return cache_key(load_settings(env), "s", 1, "q")

    memory, experience = {"family": "memory", "limit": 3}, {"family": "experience", "limit": 1}
    assert key({"sections": [memory, experience], "show": ["recall_rank"]}) == key(
        {"show": ["recall_rank"], "sections": [{"limit": 3, "family": "memory"}, experience]}
    )
    assert key({"sections": [memory, experience]}) != key({"sections": [experience, memory]})
    assert key({"sections": []}) != key({})


def test_an_equivalent_assembly_reuses_the_text_and_the_body_is_sent_as_configured(
    proxy: RecordingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(monkeypatch, assembly=DEFAULTS_SHUFFLED)
    provider = started(turn=1)
    text = provider.prefetch(QUERY)
    [request] = proxy.requests_to(PREPARE)
    assert request.json()["assembly"] == json.loads(DEFAULTS_SHUFFLED)
    assert b'"assembly": {"show": [], "sections": [{"limit": 6, "family": "memory"}' in request.body

    configure(monkeypatch, assembly="{}")  # the same effective configuration
    provider.on_turn_start(1, QUERY)
    assert provider.prefetch(QUERY) == text != ""
    assert len(sent(proxy)) == 1

    configure(
        monkeypatch, assembly='{"sections":[{"family":"experience","limit":2},{"family":"memory","limit":6}]}'
    )
    provider.on_turn_start(1, QUERY)
    provider.prefetch(QUERY)
    assert len(sent(proxy)) == 2  # a different section order is a different request
    assert sent(proxy)[1]["assembly"]["sections"][0]["family"] == "experience"


# Capabilities before assembly


def assembly_tagged(request: Received) -> Reply:
    """A scripted prepare whose text says which request it answered."""
    return json_reply(200, ready("assembly text" if "assembly" in request.json() else "legacy text"))


def scripted_server(
    monkeypatch: pytest.MonkeyPatch, caps: list[Responder], **settings: str
) -> RecordingServer:
    server = RecordingServer(scripted_paths({CAPABILITIES: caps, PREPARE: [assembly_tagged]}))
    configure(monkeypatch, base_url=server.base_url, scope="project:zebra", token=TOKEN, **settings)
    return server


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.levelno >= logging.WARNING]


def test_assembly_is_sent_once_the_server_says_it_supports_it_and_that_is_remembered(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caps = [fixed_reply(SUPPORTED)]
    with (
        scripted_server(monkeypatch, caps, assembly=json.dumps(MEMORY_ONE)) as server,
        caplog.at_level(logging.WARNING),
    ):
        provider = started(turn=1)
        assert provider.prefetch(QUERY) == "assembly text"
        for turn in (2, 3):
            provider.on_turn_start(turn, QUERY)
            provider.queue_prefetch(QUERY, session_id="hermes-session")
            assert provider.prefetch(QUERY) == "assembly text"
        assert paths(server) == [CAPABILITIES, PREPARE, PREPARE, PREPARE]
        assert server.requests_to(CAPABILITIES)[0].method == "GET"
        assert all(request.json()["assembly"] == MEMORY_ONE for request in server.requests_to(PREPARE))

        provider.shutdown()  # what is known about the server is dropped with the provider
        provider.on_turn_start(4, QUERY)
        provider.prefetch(QUERY)
        assert paths(server)[-2:] == [CAPABILITIES, PREPARE]
    assert warnings_of(caplog) == []


def test_legacy_mode_never_asks_for_capabilities(monkeypatch: pytest.MonkeyPatch) -> None:
    with scripted_server(monkeypatch, [fixed_reply(SUPPORTED)], assembly="legacy") as server:
        provider = started(turn=1)
        assert provider.prefetch(QUERY) == "legacy text"
        provider.queue_prefetch(QUERY, session_id="hermes-session")
        assert paths(server) == [PREPARE]


NOT_SUPPORTED = {
    "assembly-false": json_reply(200, capabilities(False)),
    "http-404": error_reply(404, "not_found"),
    "http-401": error_reply(401, "unauthorized"),
    "redirect": Reply(307, "text/plain", b"", {"Location": "http://127.0.0.1:9/v1/capabilities"}),
    "not-json": Reply(200, "application/json", b"{not json"),
    "missing-prepare": json_reply(200, {"api_version": "v1", "families": []}),
    "missing-assembly": json_reply(200, {"prepare": {"legacy": True}}),
    "assembly-not-bool": json_reply(200, {"prepare": {"assembly": "yes"}}),
    "not-an-object": json_reply(200, [True]),
}


@pytest.mark.parametrize("reply", NOT_SUPPORTED.values(), ids=NOT_SUPPORTED.keys())
def test_a_server_not_known_to_support_assembly_gets_legacy_requests_and_one_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, reply: Reply
) -> None:
    with (
        scripted_server(monkeypatch, [fixed_reply(reply)], assembly="{}") as server,
        caplog.at_level(logging.WARNING),
    ):
        provider = started(turn=1)
        texts = [provider.prefetch(QUERY)]
        for turn in (2, 3):
            provider.queue_prefetch(QUERY, session_id="hermes-session")
            provider.on_turn_start(turn, QUERY)
            texts.append(provider.prefetch(QUERY))
        provider.on_turn_start(3, QUERY)  # a repeated turn: served from the cache, keyed as legacy
        texts.append(provider.prefetch(QUERY))

    assert texts == ["legacy text"] * 4
    assert paths(server) == [CAPABILITIES, PREPARE, PREPARE, PREPARE]
    assert all("assembly" not in request.json() for request in server.requests_to(PREPARE))
    [warning] = warnings_of(caplog)
    assert "without assembly" in warning and server.base_url in warning and TOKEN not in warning


def test_a_server_that_cannot_answer_now_gets_legacy_for_the_turn_and_is_asked_again_later(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caps = [fixed_reply(error_reply(503, "unavailable")), fixed_reply(SUPPORTED)]
    with scripted_server(monkeypatch, caps, assembly="{}") as server, caplog.at_level(logging.WARNING):
        provider = started(turn=1)
        assert provider.prefetch(QUERY) == "legacy text"
        provider.queue_prefetch(QUERY, session_id="hermes-session")  # this turn already asked
        assert provider.prefetch(QUERY) == "legacy text"
        assert paths(server) == [CAPABILITIES, PREPARE]

        # The same turn number and query again: asked again, and the legacy text is not reused.
        provider.on_turn_start(1, QUERY)
        assert provider.prefetch(QUERY) == "assembly text"
        assert paths(server) == [CAPABILITIES, PREPARE, CAPABILITIES, PREPARE]
    assert len(warnings_of(caplog)) == 1


def test_an_unanswered_check_costs_the_turn_its_context_and_is_retried_on_a_later_turn(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    with HangingServer() as hanging, caplog.at_level(logging.WARNING):
        configure(monkeypatch, base_url=hanging.base_url, token=TOKEN, timeout="0.3", assembly="{}")
        provider = started(turn=1)
        began = time.monotonic()
        assert provider.prefetch(QUERY) == ""
        assert time.monotonic() - began < 1.0
        assert provider.prefetch(QUERY) == ""  # the same turn: no second wait
        provider.queue_prefetch(QUERY, session_id="hermes-session")  # nor in the background
        assert hanging.accepted == 1

        provider.on_turn_start(2, QUERY)
        assert provider.prefetch(QUERY) == ""
        assert hanging.accepted == 2
    messages = warnings_of(caplog)
    assert len(messages) == 3 and all("timed out" in message for message in messages)
    assert all(TOKEN not in message and QUERY not in message for message in messages)


def test_a_stopped_server_is_checked_again_on_a_later_turn(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    base_url = unused_port_url()
    configure(monkeypatch, base_url=base_url, assembly="{}")
    provider = started(turn=1)
    with caplog.at_level(logging.WARNING):
        assert provider.prefetch(QUERY) == ""
    [message] = warnings_of(caplog)
    assert "capabilities" in message and "connection refused" in message

    responder = scripted_paths({CAPABILITIES: [fixed_reply(SUPPORTED)], PREPARE: [assembly_tagged]})
    with RecordingServer(responder, port=int(base_url.rsplit(":", 1)[1])) as server:  # back up
        provider.queue_prefetch(QUERY)  # this turn has had its one check
        assert server.received == []
        provider.on_turn_start(2, QUERY)
        assert provider.prefetch(QUERY) == "assembly text"
        assert paths(server) == [CAPABILITIES, PREPARE]


def test_the_check_and_prepare_share_one_timeout(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    slow = scripted_paths(
        {CAPABILITIES: [delayed(fixed_reply(SUPPORTED), 0.3)], PREPARE: [delayed(assembly_tagged, 0.3)]}
    )
    with RecordingServer(slow) as server, caplog.at_level(logging.WARNING):
        configure(monkeypatch, base_url=server.base_url, timeout="0.5", assembly="{}")
        provider = started(turn=1)
        began = time.monotonic()
        assert provider.prefetch(QUERY) == ""  # 0.3 s + 0.3 s does not fit in 0.5 s
        elapsed = time.monotonic() - began
        assert paths(server) == [CAPABILITIES, PREPARE]
    assert 0.45 < elapsed < 0.8
    [message] = warnings_of(caplog)
    assert "timed out" in message

    with RecordingServer(slow) as server:
        configure(monkeypatch, base_url=server.base_url, timeout="0.5")
        provider = started(turn=1)
        provider.queue_prefetch(QUERY)  # the check, off the turn's path
        provider.on_turn_start(2, QUERY)
        began = time.monotonic()
        assert provider.prefetch(QUERY) == "assembly text"  # the whole budget is left for prepare
        assert time.monotonic() - began < 0.5


# Hermes 0.19.0's call order

Q1 = "What must run after the zebra gateway API changes?"
Q2 = "When are zebra gateway API reviews?"
ANSWER = "Run make zebra-contract."


def test_in_hermes_order_each_turn_prepares_once_for_its_own_message(
    proxy: RecordingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The order of agent/turn_context.py (on_turn_start, then prefetch with the new message and no
    session id) and run_agent.py `_sync_external_memory_for_turn` (sync_turn, then queue_prefetch
    with the finished turn's text and Hermes's session id)."""
    configure(monkeypatch, assembly="{}")
    provider = PowerContextMemoryProvider()
    provider.initialize("hermes-session", hermes_home="/nonexistent", platform="cli")
    texts = []
    try:
        provider.on_turn_start(1, Q1)
        texts.append(provider.prefetch(Q1))
        provider.sync_turn(Q1, ANSWER, session_id="hermes-session")
        provider.queue_prefetch(Q1, session_id="hermes-session")

        provider.on_turn_start(2, Q2)
        texts.append(provider.prefetch(Q2))
        provider.on_session_switch("hermes-session-2")  # context compression rotates the session
        provider.sync_turn(Q2, ANSWER, session_id="hermes-session-2")
        provider.queue_prefetch(Q2, session_id="hermes-session-2")

        # A multimodal message: Hermes passes "" to on_turn_start and prefetch, the flattened text later.
        provider.on_turn_start(3, "")
        texts.append(provider.prefetch(""))
        provider.sync_turn(f"[1 image] {Q1}", ANSWER, session_id="hermes-session-2")
        provider.queue_prefetch(f"[1 image] {Q1}", session_id="hermes-session-2")
    finally:
        provider.shutdown()

    requests = sent(proxy)
    assert [request["query"] for request in requests] == [Q1, Q2]  # one prepare per turn, for its own message
    # Each turn's own text (the captured turns change what a replay would return).
    assert all("BEGIN_POWERCONTEXT_PREPARED_TEXT_V1" in text for text in texts[:2]) and texts[2] == ""
    assert proxy.requests_to("/v1/memory/remember/batch")  # the turns were captured meanwhile
    assert len(proxy.requests_to(CAPABILITIES)) == 1


def test_queue_prefetch_warms_the_capabilities_check_for_the_next_turn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with scripted_server(monkeypatch, [fixed_reply(SUPPORTED)], assembly="{}") as server:
        provider = started(turn=1)
        assert provider.prefetch("") == ""  # e.g. a multimodal turn: no text to prepare for
        provider.queue_prefetch("[1 image] What is this?", session_id="hermes-session")
        assert paths(server) == [CAPABILITIES]
        provider.on_turn_start(2, QUERY)
        assert provider.prefetch(QUERY) == "assembly text"
        assert paths(server) == [CAPABILITIES, PREPARE]


# Validation and fail-open


def scripted(monkeypatch: pytest.MonkeyPatch, reply: Reply) -> RecordingServer:
    """A server that supports assembly and answers every prepare with `reply`."""
    server = RecordingServer(
        scripted_paths({CAPABILITIES: [fixed_reply(SUPPORTED)], PREPARE: [fixed_reply(reply)]})
    )
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
            configure(monkeypatch, base_url=server.base_url, token=TOKEN, assembly="legacy")
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
