"""The tools an agent corrects Memory with: revise, retire and erase (and the history it reads first).

Each call goes through the MCP server's own call path (`_mcp_server.call`, what `powercontext mcp`
runs for a `tools/call`) and the Python client to a live server with access enforced; the stored
result is then read through HTTP. A token without the grant gets the API's 403 as a tool error,
and nothing changes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx
import mcp_types as types
import pytest

from powercontext_client import AsyncPowerContextClient
from powercontext_client._mcp_server import McpSettings, call
from powercontext_client._mcp_tools import ToolSpec, build_tools
from powercontext_runtime import token_digest

from ..conftest import LiveServer

SCOPE = "project:fix"
TOKENS = {"reader": "mcp-reader-secret", "writer": "mcp-writer-secret", "eraser": "mcp-eraser-secret"}
GRANTS = {
    "reader": '["scope.read"]',
    "writer": '["scope.read", "scope.write", "server.admin"]',
    "eraser": '["scope.read", "scope.erase"]',
}
TOOLS: dict[str, ToolSpec] = {tool.name: tool for tool in build_tools()}


@pytest.fixture
def server(start_server: Callable[..., LiveServer], tmp_path: Any) -> LiveServer:
    auth = tmp_path / "auth.toml"
    auth.write_text(
        "".join(
            f'[[principal]]\nname = "{name}"\ntoken_sha256 = "{token_digest(token)}"\n'
            f'grants = [{{ actions = {GRANTS[name]}, scopes = ["project:*"] }}]\n'
            for name, token in TOKENS.items()
        )
    )
    return start_server(POWERCONTEXT_SERVER_AUTH_FILE=str(auth))


@pytest.fixture
def writer(server: LiveServer) -> Iterator[httpx.Client]:
    headers = {"Authorization": f"Bearer {TOKENS['writer']}"}
    with httpx.Client(base_url=server.base_url, headers=headers) as http:
        assert http.post("/v1/scopes", json={"scope_id": SCOPE}).status_code == 201
        yield http


async def use(server: LiveServer, who: str, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
    settings = McpSettings(url=server.base_url, token=TOKENS[who], timeout=30.0)
    async with AsyncPowerContextClient(server.base_url, TOKENS[who], timeout=30.0) as client:
        return await call(client, TOOLS[tool], arguments, settings)


def text_of(result: types.CallToolResult) -> str:
    (item,) = result.content
    assert isinstance(item, types.TextContent)
    return item.text


def remember(http: httpx.Client, text: str) -> dict[str, Any]:
    answer: dict[str, Any] = http.post("/v1/memory/remember", json={"scope_id": SCOPE, "text": text}).json()
    return answer


def history(http: httpx.Client, entry_id: str) -> httpx.Response:
    return http.post("/v1/memory/entries/history", json={"scope_id": SCOPE, "entry_id": entry_id})


async def test_an_agent_revises_and_retires_what_it_stored(server: LiveServer, writer: httpx.Client) -> None:
    stored = remember(writer, "The staging database is on port 5433.")
    entry_id = stored["citation"]["entry_id"]
    read = await use(server, "reader", "get_memory_entry_history", {"scope_id": SCOPE, "entry_id": entry_id})
    assert read.structured_content == history(writer, entry_id).json()

    revised = await use(
        server,
        "writer",
        "revise_memory_entry",
        {"scope_id": SCOPE, "citation": stored["citation"], "text": "The staging database is on port 5434."},
    )
    assert not revised.is_error, text_of(revised)
    versions = history(writer, entry_id).json()["versions"]
    assert [v["text"] for v in versions] == [
        "The staging database is on port 5433.",
        "The staging database is on port 5434.",
    ]
    assert revised.structured_content is not None
    assert revised.structured_content["citation"] == versions[-1]["citation"]

    # The replaced version's citation is stale now: the API's 409 comes back as a tool error.
    stale = await use(
        server, "writer", "retire_memory_entry", {"scope_id": SCOPE, "citation": stored["citation"]}
    )
    assert stale.is_error and text_of(stale).startswith("HTTP 409 revision_conflict: ")
    retired = await use(
        server, "writer", "retire_memory_entry", {"scope_id": SCOPE, "citation": versions[-1]["citation"]}
    )
    assert not retired.is_error, text_of(retired)
    assert history(writer, entry_id).json()["state"] == "retired"


async def test_erasure_needs_the_erase_grant_and_then_removes_every_version(
    server: LiveServer, writer: httpx.Client
) -> None:
    entry_id = remember(writer, "A secret the agent should not have kept.")["citation"]["entry_id"]
    arguments = {"scope_id": SCOPE, "entry_id": entry_id}
    for who in ("reader", "writer"):  # scope.write does not imply scope.erase
        refused = await use(server, who, "erase_memory_entry", arguments)
        assert refused.is_error
        assert text_of(refused).startswith("HTTP 403 forbidden: "), text_of(refused)
        assert history(writer, entry_id).status_code == 200
    erased = await use(server, "eraser", "erase_memory_entry", arguments)
    assert not erased.is_error, text_of(erased)
    assert erased.structured_content is not None and erased.structured_content["versions"] == 1
    assert history(writer, entry_id).status_code == 410


async def test_a_read_only_token_gets_the_apis_403_as_a_tool_error_and_nothing_changes(
    server: LiveServer, writer: httpx.Client
) -> None:
    stored = remember(writer, "Deploys happen on Tuesdays.")
    citation = {"scope_id": SCOPE, "citation": stored["citation"]}
    for tool, arguments in (
        ("revise_memory_entry", {**citation, "text": "Deploys happen on Wednesdays."}),
        ("retire_memory_entry", citation),
        ("remember", {"scope_id": SCOPE, "text": "Another fact."}),
    ):
        result = await use(server, "reader", tool, arguments)
        assert result.is_error, tool
        assert text_of(result).startswith("HTTP 403 forbidden: The Principal is not authorized"), text_of(
            result
        )
    listed = writer.post("/v1/memory/entries/list", json={"scope_id": SCOPE}).json()["entries"]
    assert [(e["citation"], e["text"]) for e in listed] == [(stored["citation"], stored["text"])]
    assert len(history(writer, stored["citation"]["entry_id"]).json()["versions"]) == 1


async def test_an_agent_sets_and_clears_an_expiry_by_revising(
    server: LiveServer, writer: httpx.Client
) -> None:
    stored = remember(writer, "The sprint ends on Friday.")
    arguments = {"scope_id": SCOPE, "citation": stored["citation"], "text": stored["text"]}
    expiring = await use(
        server, "writer", "revise_memory_entry", {**arguments, "expires_at": "2030-01-02T03:04:05Z"}
    )
    assert not expiring.is_error, text_of(expiring)
    assert expiring.structured_content is not None
    head = history(writer, stored["citation"]["entry_id"]).json()["versions"][-1]
    assert head["expires_at"].startswith("2030-01-02T03:04:05") and head["text"] == stored["text"]
    cleared = await use(
        server,
        "writer",
        "revise_memory_entry",
        {**arguments, "citation": expiring.structured_content["citation"], "expires_at": None},
    )
    assert not cleared.is_error, text_of(cleared)
    assert history(writer, stored["citation"]["entry_id"]).json()["versions"][-1]["expires_at"] is None
