"""Scope ids `.` and `..` through the MCP tools (issue 37, item 7). The tools neither create nor
erase Scopes, so the Scopes are made over HTTP; every tool that puts the id in a path (get_scope,
get_artifact_revision) must read that Scope, not what its dot segments would normalise to."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from ..conftest import LiveServer
from .conftest import TIMEOUT_S, api, create_scope, mcp_http


async def use_dot_scope(client: Client, scope_id: str) -> None:
    scope = await client.call_tool("get_scope", {"scope_id": scope_id})
    assert not scope.is_error and scope.structured_content is not None, scope.content
    assert (scope.structured_content["scope_id"], scope.structured_content["title"]) == (scope_id, "dots")
    entry = await client.call_tool("remember", {"scope_id": scope_id, "text": "Dots are ids too."})
    assert not entry.is_error and entry.structured_content is not None, entry.content
    memory = entry.structured_content["citation"]["memory_ref"]
    arguments = {
        "scope_id": scope_id,
        "family": "memory",
        "artifact_id": memory["artifact_id"],
        "revision": memory["revision"],
    }
    exact = await client.call_tool("get_artifact_revision", arguments)
    assert not exact.is_error and exact.structured_content is not None, exact.content
    assert [e["text"] for e in exact.structured_content["memory"]] == ["Dots are ids too."]
    prepared = await client.call_tool("prepare_context", {"scope_id": scope_id, "query": "dots ids"})
    assert not prepared.is_error, prepared.content


@pytest.mark.parametrize("scope_id", [".", ".."])
async def test_the_tools_read_and_write_a_dot_scope(
    server: LiveServer, tmp_path: Path, scope_id: str
) -> None:
    create_scope(server, "neighbour")
    api(server, "POST", "/v1/scopes", {"scope_id": scope_id, "title": "dots"})
    # Over HTTP: the subprocess then runs with this environment (stdio passes only a few variables).
    with mcp_http(server, tmp_path / "mcp.log") as url:
        async with Client(url, read_timeout_seconds=TIMEOUT_S) as client:
            await use_dot_scope(client, scope_id)
    assert api(server, "GET", "/v1/scopes/neighbour")["version"] == 1
