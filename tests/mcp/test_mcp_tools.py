"""The tool table of `powercontext mcp` (`_mcp_tools`), without the SDK: spec, schemas, requests."""

from __future__ import annotations

import json
from functools import cache

import pytest
import yaml
from pydantic import ValidationError

from powercontext_api.models import PrepareContextRequest, SearchRequest
from powercontext_api.operations import BY_ID, HOST_DEFAULT_ASSEMBLY
from powercontext_client._mcp_tools import (
    TOOL_OPERATIONS,
    NoArguments,
    build_tools,
    input_schema,
)

from .conftest import ROOT


@cache
def spec_summaries() -> dict[str, str]:
    """operationId -> summary, read from openapi/powercontext.yaml."""
    spec = yaml.safe_load((ROOT / "openapi" / "powercontext.yaml").read_text(encoding="utf-8"))
    return {
        operation["operationId"]: operation["summary"]
        for path in spec["paths"].values()
        for method, operation in path.items()
        if method in ("get", "post", "put", "delete")
    }


def test_descriptions_are_the_openapi_summaries() -> None:
    summaries = spec_summaries()
    descriptions = {tool.name: tool.description for tool in build_tools()}
    assert set(descriptions) == set(TOOL_OPERATIONS)
    for operation_id, description in descriptions.items():
        assert description == summaries[operation_id], operation_id


def test_every_tool_is_an_operation_of_the_table_and_none_administers_or_reviews() -> None:
    for operation_id in TOOL_OPERATIONS:
        operation = BY_ID[operation_id]
        assert operation.access in ("public", "scope.read", "scope.write", "scope.erase"), operation_id


def test_reads_are_read_only_and_only_erasure_is_destructive() -> None:
    """An agent's host may ask before a destructive call: erasure is the one that destroys data."""
    flags = {tool.name: (tool.read_only, tool.destructive) for tool in build_tools()}
    assert flags["erase_memory_entry"] == (False, True)
    assert flags["revise_memory_entry"] == flags["retire_memory_entry"] == flags["remember"] == (False, False)
    assert flags["get_memory_entry_history"] == flags["search_memory"] == (True, False)


def test_the_input_schema_is_the_request_models_own() -> None:
    by_name = {tool.name: tool for tool in build_tools()}
    assert by_name["prepare_context"].input_schema == PrepareContextRequest.model_json_schema()
    assert by_name["search_topics"].input_schema == SearchRequest.model_json_schema()
    assert by_name["get_capabilities"].input_schema == NoArguments.model_json_schema()
    assert by_name["get_capabilities"].input_schema["additionalProperties"] is False


def test_a_default_scope_makes_scope_id_optional_and_leaves_the_rest() -> None:
    schema = input_schema(PrepareContextRequest, {"scope_id": "project:demo"})
    expected = PrepareContextRequest.model_json_schema()
    assert schema["required"] == ["query"]
    assert schema["properties"]["scope_id"] == {
        **expected["properties"]["scope_id"],
        "default": "project:demo",
    }
    assert {k: v for k, v in schema.items() if k not in ("required", "properties")} == {
        k: v for k, v in expected.items() if k not in ("required", "properties")
    }
    # The model's own schema is not touched.
    assert PrepareContextRequest.model_json_schema() == expected
    only_scope = input_schema(BY_ID["get_profile"].body_model or NoArguments, {"scope_id": "project:demo"})
    assert "required" not in only_scope


def test_a_default_assembly_is_shown_in_prepares_schema_and_sent_when_a_call_sets_none() -> None:
    """`powercontext mcp` gives prepare_context the contract's host default (Memory only, eight
    entries, the most evidence in `make eval`); a call's own `assembly`, `{}` included, wins."""
    default = json.loads(HOST_DEFAULT_ASSEMBLY)
    tools = {tool.name: tool for tool in build_tools("project:demo", default)}
    prepare = tools["prepare_context"]
    assert prepare.input_schema["properties"]["assembly"]["default"] == default
    assert prepare.input_schema["required"] == ["query"]
    sent = prepare.request({"query": "q"}).body
    assert sent is not None and sent.model_dump(mode="json", exclude_unset=True)["assembly"] == default
    own = prepare.request({"query": "q", "assembly": {}}).body
    assert own is not None and own.model_dump(mode="json", exclude_unset=True)["assembly"] == {}
    # Only prepare has an assembly; no other tool's schema or request changes.
    assert tools["search_topics"].input_schema == input_schema(SearchRequest, {"scope_id": "project:demo"})
    # Without a default (`--assembly legacy`), a call without one sends none: the legacy answer.
    (legacy, *_) = build_tools("project:demo", None)
    body = legacy.request({"query": "q"}).body
    assert body is not None and "assembly" not in body.model_dump(mode="json", exclude_unset=True)


def test_requests_carry_what_the_caller_set_and_the_default_scope() -> None:
    tools = {tool.name: tool for tool in build_tools("project:demo")}
    prepare = tools["prepare_context"].request({"query": "q", "assembly": {}})
    assert isinstance(prepare.body, PrepareContextRequest)
    assert prepare.body.model_dump(mode="json", exclude_unset=True) == {
        "scope_id": "project:demo",
        "query": "q",
        "assembly": {},
    }
    explicit = tools["search_memory"].request({"scope_id": "project:other", "query": "q"})
    assert explicit.body is not None and explicit.body.model_dump()["scope_id"] == "project:other"
    revision = tools["get_artifact_revision"].request(
        {"family": "memory", "artifact_id": "memory", "revision": 2}
    )
    assert revision.body is None
    assert revision.path == {
        "scope_id": "project:demo",
        "family": "memory",
        "artifact_id": "memory",
        "revision": 2,
    }
    assert revision.query is None
    scopes = tools["list_scopes"].request({"limit": 5})
    assert (scopes.path, scopes.query) == ({}, {"limit": 5})
    assert tools["list_scopes"].request({}).query is None  # the server's default page size applies


def test_invalid_arguments_raise_the_request_models_validation_error() -> None:
    (prepare, *_) = build_tools()
    with pytest.raises(ValidationError) as raised:
        prepare.request({"query": "q"})
    assert raised.value.errors()[0]["loc"] == ("scope_id",)


def test_remember_takes_an_optional_utc_expiry_and_the_duplicate_switch() -> None:
    tools = {tool.name: tool for tool in build_tools("project:demo")}
    remember = tools["remember"]
    properties = remember.input_schema["properties"]
    assert {"expires_at", "deduplicate"} <= set(properties)
    assert "expires_at" not in remember.input_schema["required"]
    sent = remember.request({"text": "Rotate the keys.", "expires_at": "2031-03-01T09:00:00Z"})
    assert sent.body is not None
    assert sent.body.model_dump(mode="json", exclude_unset=True) == {
        "scope_id": "project:demo",
        "text": "Rotate the keys.",
        "expires_at": "2031-03-01T09:00:00Z",
    }
    with pytest.raises(ValidationError) as raised:
        remember.request({"text": "t", "expires_at": "2031-03-01T11:00:00+02:00"})
    assert raised.value.errors()[0]["loc"] == ("expires_at",)
    # The answer says whether the text was already remembered.
    assert "duplicate" in (remember.output_schema or {})["properties"]
