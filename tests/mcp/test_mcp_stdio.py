"""`powercontext mcp` over stdio, driven by the official MCP SDK client against a real server.

Each test spawns the installed command as a host does and checks what the model would see: the
tools and their schemas, prepared text byte for byte as HTTP prepare returns it, the JSON answers
of the other tools, and failures as tool errors.
"""

from __future__ import annotations

import json
import socket
from typing import Any

import mcp_types as types
import pytest
from mcp import MCPError

from powercontext_api.operations import BY_ID
from powercontext_client._mcp_tools import ERASE_ACCESS, READ_ACCESS, TOOL_OPERATIONS, NoArguments

from ..conftest import LiveServer
from .conftest import DEFAULT_ASSEMBLY, api, as_sent, create_scope, stdio_client
from .test_mcp_tools import spec_summaries

SCOPE = "project:mcp"
FACTS = (
    "Release builds come from main only; tag them vX.Y.Z.",
    "Café notes — “quotes”, tabs\tand 日本語 survive the trip unchanged.",
    "After changing the OpenAPI spec, run make api-generate and the contract tests.",
)


def text_of(result: types.CallToolResult) -> str:
    """The one text item of a result; a result of any other shape fails the test."""
    (item,) = result.content
    assert isinstance(item, types.TextContent)
    return item.text


def prepare_over_http(server: LiveServer, body: dict[str, Any]) -> dict[str, Any]:
    answer: dict[str, Any] = api(server, "POST", "/v1/context/prepare", body)
    return answer


async def test_tools_are_the_operations_with_their_request_models_schemas(server: LiveServer) -> None:
    async with stdio_client(server.base_url) as client:
        listed = (await client.list_tools()).tools
    assert [tool.name for tool in listed] == list(TOOL_OPERATIONS)
    summaries = spec_summaries()
    for tool in listed:
        operation = BY_ID[tool.name]
        model = operation.body_model or operation.parameters_model or NoArguments
        expected = model.model_json_schema()
        if tool.name == "prepare_context":  # the default assembly is shown (and `assembly` was optional)
            expected["properties"]["assembly"]["default"] = DEFAULT_ASSEMBLY
        assert tool.input_schema == expected, tool.name
        assert tool.description == summaries[tool.name]
        if tool.name == "prepare_context":
            assert tool.output_schema is None  # its result is the text itself
        else:
            assert tool.output_schema == operation.response_model.model_json_schema(mode="serialization")
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is (operation.access in READ_ACCESS)
        assert tool.annotations.destructive_hint is (operation.access == ERASE_ACCESS)


async def test_remembered_entries_prepare_to_the_http_text_byte_for_byte(server: LiveServer) -> None:
    create_scope(server, SCOPE)
    async with stdio_client(server.base_url) as client:
        entry = await client.call_tool("remember", {"scope_id": SCOPE, "text": FACTS[0], "kind": "decision"})
        assert not entry.is_error, text_of(entry)
        assert json.loads(text_of(entry)) == entry.structured_content
        stored = api(
            server,
            "POST",
            "/v1/memory/entries/get",
            {"scope_id": SCOPE, "citation": entry.structured_content["citation"]},
        )
        # A remember also says whether the text duplicated an active entry; a read has no such flag.
        assert entry.structured_content == {**stored, "duplicate": False}
        assert stored["kind"] == "decision"
        batch = await client.call_tool(
            "remember_batch", {"scope_id": SCOPE, "entries": [{"text": FACTS[1]}, {"text": FACTS[2]}]}
        )
        assert not batch.is_error, text_of(batch)
        assert len(batch.structured_content["citations"]) == 2

        for body in (
            {"scope_id": SCOPE, "query": "release main café OpenAPI"},
            {"scope_id": SCOPE, "query": "release main café OpenAPI", "assembly": {}},
            {
                "scope_id": SCOPE,
                "query": "release main café OpenAPI",
                "max_bytes": 700,
                "assembly": {"sections": [{"family": "memory", "limit": 3}], "show": ["recall_rank"]},
            },
        ):
            expected = prepare_over_http(server, as_sent(body))
            assert expected["status"] == "ready"
            result = await client.call_tool("prepare_context", body)
            assert not result.is_error, text_of(result)
            assert result.structured_content is None
            assert text_of(result).encode("utf-8") == expected["content"].encode("utf-8"), body


MEMORY_TWO = {"sections": [{"family": "memory", "limit": 2}]}


@pytest.mark.parametrize(
    ("option", "assembly"),
    [
        ((), DEFAULT_ASSEMBLY),
        (("--assembly", json.dumps(MEMORY_TWO)), MEMORY_TWO),
        (("--assembly", "legacy"), None),
    ],
    ids=["default", "configured", "legacy"],
)
async def test_the_assembly_option_is_what_a_call_without_one_prepares_with(
    server: LiveServer, option: tuple[str, ...], assembly: dict[str, object] | None
) -> None:
    """Unset, Memory only, eight entries: the most evidence in `make eval` (docs/mcp.md)."""
    create_scope(server, SCOPE)
    api(server, "POST", "/v1/memory/remember", {"scope_id": SCOPE, "text": FACTS[0]})
    arguments = {"scope_id": SCOPE, "query": "release builds"}
    expected = prepare_over_http(
        server, arguments if assembly is None else {**arguments, "assembly": assembly}
    )
    async with stdio_client(server.base_url, *option) as client:
        (prepare, *_) = (await client.list_tools()).tools
        result = await client.call_tool("prepare_context", arguments)
    assert prepare.input_schema["properties"]["assembly"].get("default") == assembly
    assert text_of(result) == expected["content"] != ""
    legacy = "BEGIN_POWERCONTEXT_PREPARED_CONTEXT_V1" in text_of(result)
    assert legacy is (assembly is None)


async def test_an_empty_prepare_is_one_empty_text_item(server: LiveServer) -> None:
    create_scope(server, SCOPE)
    async with stdio_client(server.base_url) as client:
        for body in (
            {"scope_id": SCOPE, "query": "nothing is stored yet"},
            {"scope_id": SCOPE, "query": "nothing asked for", "assembly": {"sections": []}},
        ):
            assert prepare_over_http(server, as_sent(body))["status"] == "empty"
            result = await client.call_tool("prepare_context", body)
            assert not result.is_error
            assert text_of(result) == ""


async def test_api_errors_are_tool_errors_with_status_code_and_message(server: LiveServer) -> None:
    create_scope(server, SCOPE)
    async with stdio_client(server.base_url) as client:
        missing = await client.call_tool("prepare_context", {"scope_id": "project:nowhere", "query": "x"})
        assert missing.is_error
        assert text_of(missing).startswith("HTTP 404 scope_not_found: The requested Scope was not found.")
        # Valid for the request model, refused by the server's policy: the server's 422 comes through.
        too_many = await client.call_tool(
            "prepare_context",
            {
                "scope_id": SCOPE,
                "query": "x",
                "assembly": {
                    "sections": [{"family": "memory", "limit": 8}, {"family": "topic-memory", "limit": 8}]
                },
            },
        )
        assert too_many.is_error
        assert text_of(too_many).startswith("HTTP 422 invalid_request: ")
        assert "[body.assembly.sections] The section limits add up to more than" in text_of(too_many)


async def test_invalid_arguments_are_tool_errors_naming_the_field(server: LiveServer) -> None:
    async with stdio_client(server.base_url) as client:
        for tool, arguments, message in (
            ("prepare_context", {"scope_id": SCOPE}, "query: Field required"),
            ("prepare_context", {"scope_id": SCOPE, "query": "  "}, "query: must not be blank"),
            ("prepare_context", {"scope_id": SCOPE, "query": "q", "assembly": None}, "assembly: "),
            ("search_memory", {"scope_id": SCOPE, "query": "q", "limit": "5"}, "limit: Input should be"),
            ("search_memory", {"scope_id": SCOPE, "query": "q", "colour": 1}, "colour: Extra inputs"),
            ("remember", {"scope_id": "a/b", "text": "t"}, "scope_id: must not be blank or hold /"),
            ("get_capabilities", {"verbose": True}, "verbose: Extra inputs are not permitted"),
        ):
            result = await client.call_tool(tool, arguments)
            assert result.is_error, (tool, arguments)
            assert text_of(result).startswith(f"invalid arguments for {tool}: "), text_of(result)
            assert message in text_of(result), text_of(result)
        # A tool that is not listed is the caller's protocol error, not a tool result.
        with pytest.raises(MCPError, match="Unknown tool: forget_everything"):
            await client.call_tool("forget_everything", {})


async def test_scope_option_makes_scope_id_optional_and_its_default(server: LiveServer) -> None:
    create_scope(server, "project:default")
    create_scope(server, "project:other")
    async with stdio_client(server.base_url, "--scope", "project:default") as client:
        for tool in (await client.list_tools()).tools:
            operation = BY_ID[tool.name]
            model = operation.body_model or operation.parameters_model or NoArguments
            expected = model.model_json_schema()
            if tool.name == "prepare_context":
                expected["properties"]["assembly"]["default"] = DEFAULT_ASSEMBLY
            if "scope_id" in expected["properties"]:
                expected["properties"]["scope_id"]["default"] = "project:default"
                expected["required"].remove("scope_id")
                if not expected["required"]:
                    del expected["required"]
            assert tool.input_schema == expected, tool.name

        entry = await client.call_tool("remember", {"text": FACTS[0]})
        assert not entry.is_error, text_of(entry)
        listed = api(server, "POST", "/v1/memory/entries/list", {"scope_id": "project:default"})
        assert [e["text"] for e in listed["entries"]] == [FACTS[0]]
        prepared = await client.call_tool("prepare_context", {"query": "release builds"})
        expected_text = prepare_over_http(
            server, as_sent({"scope_id": "project:default", "query": "release builds"})
        )
        assert text_of(prepared) == expected_text["content"]
        scope = await client.call_tool("get_scope", {})
        assert scope.structured_content["scope_id"] == "project:default"
        # An explicit scope_id still wins.
        other = await client.call_tool("search_memory", {"scope_id": "project:other", "query": "release"})
        assert other.structured_content == {"hits": []}


async def test_every_tool_answers_what_the_api_answers(server: LiveServer) -> None:
    create_scope(server, SCOPE)
    entry = api(server, "POST", "/v1/memory/remember", {"scope_id": SCOPE, "text": FACTS[0]})
    topic = api(
        server,
        "POST",
        "/v1/topic-memory/put",
        {"scope_id": SCOPE, "title": "Releases", "summary": "How we release.", "detail": "From main."},
    )
    experience = _approve(
        server,
        api(
            server,
            "POST",
            "/v1/experience/propose",
            {
                "scope_id": SCOPE,
                "situation": "A release",
                "action": "Tagged main",
                "outcome": "Fine",
                "lesson": "Tag main",
            },
        ),
    )
    profile = _approve(
        server,
        api(
            server,
            "POST",
            "/v1/profile/propose",
            {"scope_id": SCOPE, "content": "# Team\nShips from main.\n"},
        ),
    )
    citation = {"scope_id": SCOPE, "citation": entry["citation"]}
    entry_id = {"scope_id": SCOPE, "entry_id": entry["citation"]["entry_id"]}
    search = {"scope_id": SCOPE, "query": "release main"}
    experience_ref = {"scope_id": SCOPE, "artifact": experience["committed"]}
    topic_ref = {"scope_id": SCOPE, "artifact": topic["artifact"]}
    revision = {"family": "experience", "artifact_id": experience["committed"]["artifact_id"], "revision": 1}
    cases: list[tuple[str, dict[str, Any], str, str, dict[str, Any] | None]] = [
        ("search_memory", search, "POST", "/v1/memory/search", search),
        ("get_memory_entry", citation, "POST", "/v1/memory/entries/get", citation),
        ("get_memory_entry_history", entry_id, "POST", "/v1/memory/entries/history", entry_id),
        ("list_memory_entries", {"scope_id": SCOPE}, "POST", "/v1/memory/entries/list", {"scope_id": SCOPE}),
        ("search_experience", search, "POST", "/v1/experience/search", search),
        ("get_experience", experience_ref, "POST", "/v1/experience/get", experience_ref),
        ("search_topics", search, "POST", "/v1/topic-memory/search", search),
        ("get_topic", topic_ref, "POST", "/v1/topic-memory/get", topic_ref),
        ("get_profile", {"scope_id": SCOPE}, "POST", "/v1/profile/get", {"scope_id": SCOPE}),
        (
            "get_artifact_revision",
            {"scope_id": SCOPE, **revision},
            "GET",
            f"/v1/scopes/{SCOPE}/artifacts/experience/{revision['artifact_id']}/revisions/1",
            None,
        ),
        ("get_scope", {"scope_id": SCOPE}, "GET", f"/v1/scopes/{SCOPE}", None),
        ("list_scopes", {"limit": 1}, "GET", "/v1/scopes?limit=1", None),
        ("get_capabilities", {}, "GET", "/v1/capabilities", None),
    ]
    writes = {
        "remember",
        "remember_batch",
        "revise_memory_entry",
        "retire_memory_entry",
        "erase_memory_entry",
    }
    assert {case[0] for case in cases} | {"prepare_context"} | writes == set(TOOL_OPERATIONS)
    async with stdio_client(server.base_url) as client:
        for tool, arguments, method, path, body in cases:
            # The SDK client also checks `structuredContent` against the tool's output schema.
            result = await client.call_tool(tool, arguments)
            assert not result.is_error, (tool, text_of(result))
            expected = api(server, method, path, body)
            assert result.structured_content == expected, tool
            assert json.loads(text_of(result)) == expected, tool
    assert profile["committed"]["family"] == "profile"


def _approve(server: LiveServer, candidate: dict[str, Any]) -> dict[str, Any]:
    decision = {
        "scope_id": SCOPE,
        "candidate_id": candidate["candidate_id"],
        "expected_version": candidate["version"],
    }
    approved: dict[str, Any] = api(server, "POST", "/v1/candidates/approve", decision)
    return approved


async def test_url_and_token_come_from_the_options_or_the_environment(
    start_server: Any,
) -> None:
    server: LiveServer = start_server(POWERCONTEXT_SERVER_AUTH_TOKEN="pc_secret")
    async with stdio_client(None, env={"POWERCONTEXT_URL": server.base_url}) as client:
        refused = await client.call_tool("list_scopes", {})
        assert refused.is_error
        assert text_of(refused).startswith("HTTP 401 unauthorized: ")
    env = {"POWERCONTEXT_URL": server.base_url, "POWERCONTEXT_TOKEN": "pc_secret"}
    async with stdio_client(None, env=env) as client:
        listed = await client.call_tool("list_scopes", {})
        assert listed.structured_content == {"scopes": [], "next_cursor": None}
    async with stdio_client(server.base_url, "--token", "pc_secret") as client:
        assert not (await client.call_tool("get_capabilities", {})).is_error


async def test_an_unreachable_server_is_a_tool_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"  # nothing listens: the socket never does
        async with stdio_client(url) as client:
            result = await client.call_tool("prepare_context", {"scope_id": SCOPE, "query": "x"})
    assert result.is_error
    assert text_of(result).startswith(f"the server is not reachable at {url} ")
