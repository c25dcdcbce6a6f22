"""`powercontext mcp --http`: streamable HTTP, driven by the official SDK's streamable HTTP client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import mcp_types as types
import pytest
from mcp import Client

from powercontext_client._mcp_tools import TOOL_OPERATIONS

from ..conftest import LiveServer
from .conftest import TIMEOUT_S, api, as_sent, create_scope, mcp_http


@pytest.fixture
def mcp_url(server: LiveServer, tmp_path: Path) -> Iterator[str]:
    """`powercontext mcp --http 0` (a free port on the default host) serving the test server's data."""
    create_scope(server, "project:http")
    with mcp_http(server, tmp_path / "mcp-http.log", "--scope", "project:http") as url:
        yield url


async def test_streamable_http_serves_the_tools_on_loopback(server: LiveServer, mcp_url: str) -> None:
    assert mcp_url.startswith("http://127.0.0.1:")
    api(
        server,
        "POST",
        "/v1/memory/remember",
        {"scope_id": "project:http", "text": "Deploys go out on Tuesdays."},
    )
    expected = api(
        server, "POST", "/v1/context/prepare", as_sent({"scope_id": "project:http", "query": "deploys"})
    )
    # "auto" negotiates the 2026 protocol, "legacy" the initialize handshake most hosts still use.
    for mode in ("auto", "legacy"):
        with anyio.fail_after(TIMEOUT_S):
            async with Client(mcp_url, mode=mode, read_timeout_seconds=TIMEOUT_S) as client:
                assert [tool.name for tool in (await client.list_tools()).tools] == list(TOOL_OPERATIONS)
                result = await client.call_tool("prepare_context", {"query": "deploys"})
        assert not result.is_error
        (item,) = result.content
        assert isinstance(item, types.TextContent)
        assert item.text == expected["content"], mode


def test_a_foreign_host_header_is_refused(mcp_url: str) -> None:
    # DNS-rebinding protection: a page elsewhere cannot reach the loopback server through its name.
    response = httpx.post(
        mcp_url,
        headers={
            "Host": "attacker.example",
            "Content-Type": "application/json",
            "Accept": "application/json",
        },
        content=b"{}",
        timeout=TIMEOUT_S,
    )
    assert response.status_code == 421
