"""What the client puts on the wire: exact request bytes, paths, headers.

A transport double is right here: these tests assert the outbound bytes, not server behaviour.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from powercontext_api.models import (
    Assembly,
    BatchEntry,
    MemoryCitation,
    MemoryEntry,
    PreparedContext,
    ScopeDescriptor,
)
from powercontext_client import UNSET, InvalidArgumentError, PowerContextClient

from .client_recorder import CITATION, EMPTY, ENTRY, READY, SCOPE, Recorder, reply


def sent_json(recorder: Recorder) -> Any:
    return json.loads(recorder.last.content)


# prepare_context: `assembly` and `max_bytes` -------------------------------------------------------


def test_prepare_without_assembly_sends_no_assembly_key_and_no_max_bytes() -> None:
    recorder = Recorder(reply(200, READY))
    with recorder.client() as pc:
        pc.prepare_context("project:demo", "how to validate?")
    assert recorder.last.method == "POST"
    assert recorder.last.url.path == "/v1/context/prepare"
    assert recorder.last.content == b'{"scope_id":"project:demo","query":"how to validate?"}'


def test_prepare_with_unset_sentinel_is_the_same_as_not_passing_assembly() -> None:
    recorder = Recorder(reply(200, READY))
    with recorder.client() as pc:
        pc.prepare_context("project:demo", "q", assembly=UNSET)
    assert "assembly" not in sent_json(recorder)


def test_prepare_sends_max_bytes_only_when_given() -> None:
    recorder = Recorder(reply(200, READY))
    with recorder.client() as pc:
        pc.prepare_context("project:demo", "q", max_bytes=8000)
    assert recorder.last.content == b'{"scope_id":"project:demo","query":"q","max_bytes":8000}'


def test_prepare_with_empty_assembly_sends_empty_object() -> None:
    recorder = Recorder(reply(200, READY))
    with recorder.client() as pc:
        pc.prepare_context("project:demo", "q", assembly={})
    assert recorder.last.content == b'{"scope_id":"project:demo","query":"q","assembly":{}}'


def test_prepare_with_empty_sections_sends_them_as_given() -> None:
    recorder = Recorder(reply(200, EMPTY))
    with recorder.client() as pc:
        pc.prepare_context("project:demo", "q", assembly={"sections": []})
    assert recorder.last.content == b'{"scope_id":"project:demo","query":"q","assembly":{"sections":[]}}'


def test_prepare_with_explicit_none_assembly_sends_json_null() -> None:
    recorder = Recorder(reply(200, READY))
    with recorder.client() as pc:
        pc.prepare_context("project:demo", "q", assembly=None)
    assert recorder.last.content == b'{"scope_id":"project:demo","query":"q","assembly":null}'


def test_prepare_sends_assembly_options_unchanged_and_in_order() -> None:
    assembly = {
        "format": "markdown",
        "sections": [{"family": "experience", "limit": 2}, {"family": "memory", "limit": 5}],
        "show": ["confidence", "recall_rank"],
    }
    recorder = Recorder(reply(200, READY))
    with recorder.client() as pc:
        pc.prepare_context("project:demo", "q", max_bytes=8000, assembly=assembly)
    assert recorder.last.content == (
        b'{"scope_id":"project:demo","query":"q","max_bytes":8000,"assembly":'
        b'{"format":"markdown","sections":[{"family":"experience","limit":2},'
        b'{"family":"memory","limit":5}],"show":["confidence","recall_rank"]}}'
    )


def test_prepare_with_default_assembly_model_sends_empty_object() -> None:
    recorder = Recorder(reply(200, READY))
    with recorder.client() as pc:
        pc.prepare_context("project:demo", "q", assembly=Assembly())
    assert recorder.last.content == b'{"scope_id":"project:demo","query":"q","assembly":{}}'


def test_prepare_with_assembly_model_sends_only_the_fields_set() -> None:
    recorder = Recorder(reply(200, EMPTY))
    with recorder.client() as pc:
        pc.prepare_context("project:demo", "q", assembly=Assembly(sections=[]))
        assert recorder.last.content == b'{"scope_id":"project:demo","query":"q","assembly":{"sections":[]}}'
        pc.prepare_context(
            "project:demo",
            "q",
            max_bytes=8000,
            assembly=Assembly.model_validate(
                {
                    "format": "markdown",
                    "sections": [{"family": "experience", "limit": 2}, {"family": "memory", "limit": 5}],
                    "show": ["confidence", "recall_rank"],
                }
            ),
        )
    assert recorder.last.content == (
        b'{"scope_id":"project:demo","query":"q","max_bytes":8000,"assembly":'
        b'{"format":"markdown","sections":[{"family":"experience","limit":2},'
        b'{"family":"memory","limit":5}],"show":["confidence","recall_rank"]}}'
    )


def test_prepare_with_assembly_model_and_dict_send_the_same_bytes() -> None:
    as_dict = {"sections": [{"family": "topic-memory", "limit": 3}, {"family": "profile", "limit": 1}]}
    recorder = Recorder(reply(200, READY))
    with recorder.client() as pc:
        pc.prepare_context("project:demo", "q", assembly=as_dict)
        from_dict = recorder.last.content
        pc.prepare_context("project:demo", "q", assembly=Assembly.model_validate(as_dict))
        from_model = recorder.last.content
    assert (
        from_dict
        == from_model
        == (
            b'{"scope_id":"project:demo","query":"q","assembly":{"sections":'
            b'[{"family":"topic-memory","limit":3},{"family":"profile","limit":1}]}}'
        )
    )


def test_prepare_sends_an_invalid_assembly_dict_as_given_for_the_server_to_judge() -> None:
    recorder = Recorder(reply(200, READY))
    with recorder.client() as pc:
        pc.prepare_context("project:demo", "q", assembly={"sections": [{"family": "skill", "limit": 9}]})
    assert sent_json(recorder)["assembly"] == {"sections": [{"family": "skill", "limit": 9}]}


def test_prepare_does_not_mutate_the_callers_assembly_dict() -> None:
    assembly: dict[str, Any] = {"sections": []}
    recorder = Recorder(reply(200, EMPTY))
    with recorder.client() as pc:
        pc.prepare_context("project:demo", "q", assembly=assembly)
    assert assembly == {"sections": []}


def test_prepare_sends_non_ascii_query_as_utf8() -> None:
    recorder = Recorder(reply(200, READY))
    with recorder.client() as pc:
        pc.prepare_context("project:demo", "记忆系统 …")
    assert recorder.last.content == '{"scope_id":"project:demo","query":"记忆系统 …"}'.encode()
    assert recorder.last.headers["Content-Type"] == "application/json"


def test_prepare_returns_the_generated_model_with_content_unchanged() -> None:
    recorder = Recorder(reply(200, {**READY, "content": "  a\n\tb \n", "content_bytes": 8}))
    with recorder.client() as pc:
        prepared = pc.prepare_context("project:demo", "q")
    assert isinstance(prepared, PreparedContext)
    assert prepared.schema_ == "powercontext.prepared-context.v1"
    assert prepared.content == "  a\n\tb \n"
    assert prepared.content_bytes == 8


def test_prepare_rejects_an_out_of_range_max_bytes_before_sending() -> None:
    recorder = Recorder(reply(200, READY))
    with recorder.client() as pc, pytest.raises(InvalidArgumentError):
        pc.prepare_context("project:demo", "q", max_bytes=100)
    assert recorder.requests == []


# Memory ----------------------------------------------------------------------------------------------


def test_remember_without_kind_omits_kind() -> None:
    recorder = Recorder(reply(200, ENTRY))
    with recorder.client() as pc:
        entry = pc.remember("project:demo", "Run make contract-test.")
    assert recorder.last.url.path == "/v1/memory/remember"
    assert recorder.last.content == b'{"scope_id":"project:demo","text":"Run make contract-test."}'
    assert isinstance(entry, MemoryEntry)
    assert entry.citation.memory_ref.revision == 3


def test_remember_sends_kind_and_expected_revision_when_given() -> None:
    recorder = Recorder(reply(200, ENTRY))
    with recorder.client() as pc:
        pc.remember("project:demo", "t", kind="decision", expected_revision=0)
    assert sent_json(recorder) == {
        "scope_id": "project:demo",
        "text": "t",
        "kind": "decision",
        "expected_revision": 0,
    }


def test_remember_batch_sends_strings_models_and_dicts_as_entries_in_order() -> None:
    recorder = Recorder(reply(200, {"citations": [CITATION, CITATION, CITATION]}))
    with recorder.client() as pc:
        result = pc.remember_batch(
            "project:demo",
            ["plain", BatchEntry(text="model", kind="decision"), {"text": "dict"}],
            kind="note",
            expected_revision=4,
        )
    assert recorder.last.url.path == "/v1/memory/remember/batch"
    assert recorder.last.content == (
        b'{"scope_id":"project:demo","entries":[{"text":"plain","kind":"note"},'
        b'{"text":"model","kind":"decision"},{"text":"dict"}],"expected_revision":4}'
    )
    assert [c.entry_id for c in result.citations] == [CITATION["entry_id"]] * 3


def test_remember_batch_refuses_an_invalid_entry_before_sending() -> None:
    recorder = Recorder(reply(200, {"citations": []}))
    with recorder.client() as pc, pytest.raises(InvalidArgumentError) as raised:
        pc.remember_batch("project:demo", ["fine", "  "])
    assert isinstance(raised.value.__cause__, ValidationError)
    assert raised.value.__cause__.errors()[0]["loc"][:3] == ("entries", 1, "text")
    assert recorder.requests == []


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("retire_memory_entry", "/v1/memory/entries/retire"),
        ("get_memory_entry", "/v1/memory/entries/get"),
    ],
)
def test_citation_argument_accepts_the_model_or_a_dict_and_sends_the_same_bytes(
    method: str, path: str
) -> None:
    recorder = Recorder(reply(200, ENTRY))
    with recorder.client() as pc:
        getattr(pc, method)("project:demo", CITATION)
        as_dict = recorder.last.content
        getattr(pc, method)("project:demo", MemoryCitation.model_validate(CITATION))
        as_model = recorder.last.content
    assert recorder.last.url.path == path
    assert as_dict == as_model
    assert json.loads(as_dict) == {"scope_id": "project:demo", "citation": CITATION}


def test_revise_sends_scope_citation_and_text() -> None:
    recorder = Recorder(reply(200, ENTRY))
    with recorder.client() as pc:
        pc.revise_memory_entry("project:demo", CITATION, "new text")
    assert recorder.last.url.path == "/v1/memory/entries/revise"
    assert sent_json(recorder) == {"scope_id": "project:demo", "citation": CITATION, "text": "new text"}


def test_list_entries_and_search_send_limit_and_cursor_only_when_given() -> None:
    recorder = Recorder(reply(200, {"entries": [], "next_cursor": None}))
    with recorder.client() as pc:
        pc.list_memory_entries("project:demo")
        assert sent_json(recorder) == {"scope_id": "project:demo"}
        pc.list_memory_entries("project:demo", limit=2, cursor="abc")
        assert sent_json(recorder) == {"scope_id": "project:demo", "limit": 2, "cursor": "abc"}
    recorder = Recorder(reply(200, {"hits": [{"citation": CITATION, "text": "x", "score": 1.25}]}))
    with recorder.client() as pc:
        result = pc.search_memory("project:demo", "contract")
        assert recorder.last.content == b'{"scope_id":"project:demo","query":"contract"}'
        assert (result.hits[0].text, result.hits[0].score) == ("x", 1.25)
        pc.search_memory("project:demo", "contract", limit=3)
        assert sent_json(recorder)["limit"] == 3


# Scopes ----------------------------------------------------------------------------------------------


def test_create_scope_sends_only_the_fields_given() -> None:
    recorder = Recorder(reply(201, SCOPE))
    with recorder.client() as pc:
        scope = pc.create_scope("project:demo")
        assert recorder.last.content == b'{"scope_id":"project:demo"}'
        pc.create_scope("project:demo", title="Demo", summary="", context_references=("team:a",))
        assert sent_json(recorder) == {
            "scope_id": "project:demo",
            "title": "Demo",
            "summary": "",
            "context_references": ["team:a"],
        }
    assert isinstance(scope, ScopeDescriptor)
    assert scope.version == 1


def test_update_scope_puts_to_the_percent_encoded_scope_path() -> None:
    recorder = Recorder(reply(200, SCOPE))
    with recorder.client() as pc:
        pc.update_scope("project:a b?c#d", expected_version=1, context_references=[])
    assert recorder.last.method == "PUT"
    assert recorder.last.url.raw_path == b"/v1/scopes/project:a%20b%3Fc%23d"
    assert recorder.last.content == b'{"expected_version":1,"context_references":[]}'


def test_get_scope_and_list_scopes_send_no_body() -> None:
    recorder = Recorder(reply(200, SCOPE))
    with recorder.client() as pc:
        pc.get_scope("project:demo")
        assert recorder.last.method == "GET"
        assert recorder.last.url.raw_path == b"/v1/scopes/project:demo"
        assert recorder.last.content == b""
    recorder = Recorder(reply(200, {"scopes": [SCOPE], "next_cursor": "n"}))
    with recorder.client() as pc:
        page = pc.list_scopes()
        assert recorder.last.url.raw_path == b"/v1/scopes"
        pc.list_scopes(limit=1, cursor="n")
        assert dict(recorder.last.url.params) == {"limit": "1", "cursor": "n"}
    assert page.next_cursor == "n"
    assert page.scopes[0].scope_id == "project:demo"


def test_blank_scope_id_is_rejected_before_sending() -> None:
    recorder = Recorder(reply(200, SCOPE))
    with recorder.client() as pc, pytest.raises(InvalidArgumentError):
        pc.get_scope(" ")
    assert recorder.requests == []


# Service and headers ---------------------------------------------------------------------------------


def test_service_operations_use_their_paths() -> None:
    capabilities = {
        "api_version": "0.1.0",
        "families": ["memory", "experience", "profile", "topic-memory"],
        "prepare": {
            "legacy": True,
            "assembly": True,
            "schema": "powercontext.prepared-context.v1",
            "min_max_bytes": 512,
            "max_max_bytes": 32768,
            "default_max_bytes": 8000,
            "assembly_families": ["memory", "experience", "profile", "topic-memory"],
            "assembly_formats": ["markdown"],
            "assembly_max_entries": 8,
        },
    }
    recorder = Recorder(
        lambda r: reply(200, capabilities if r.url.path == "/v1/capabilities" else {"status": "ok"})(r)
    )
    with recorder.client() as pc:
        assert pc.health_live().status == "ok"
        assert pc.health_ready().status == "ok"
        capabilities_model = pc.capabilities()
        assert capabilities_model.prepare.default_max_bytes == 8000
        assert capabilities_model.prepare.assembly_max_entries == 8
    assert [r.url.path for r in recorder.requests] == ["/health/live", "/health/ready", "/v1/capabilities"]


def test_token_is_sent_as_bearer_authorization() -> None:
    recorder = Recorder(reply(200, {"status": "ok"}))
    with recorder.client(token="s3cret") as pc:
        pc.health_live()
        assert "s3cret" not in repr(pc)
    assert recorder.last.headers["Authorization"] == "Bearer s3cret"


def test_no_token_sends_no_authorization_header() -> None:
    recorder = Recorder(reply(200, {"status": "ok"}))
    with recorder.client() as pc:
        pc.health_live()
    assert "Authorization" not in recorder.last.headers


def test_base_url_path_prefix_is_kept() -> None:
    import httpx

    recorder = Recorder(reply(200, {"status": "ok"}))
    with PowerContextClient("http://h.test/pc", transport=httpx.MockTransport(recorder)) as pc:
        pc.health_live()
    assert str(recorder.last.url) == "http://h.test/pc/health/live"
