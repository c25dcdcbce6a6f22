"""The MCP server setup registers is one Codex can start and use: Codex's own MCP client (through
its app-server) lists PowerContext's tools and calls one against a server with access control,
with the token taken from the environment variable setup was told about, never from a file."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from hosts.core.powercontext_host import codex_setup
from hosts.core.powercontext_host.codex_trust import AppServer
from hosts.core.powercontext_host.settings import HookSettings
from tests.conftest import LiveServer
from tests.hosts.codex.session import CODEX, CodexHome

TOKEN = "codex-mcp-secret-token"


def list_scopes_through_codex(home: CodexHome, env: dict[str, str]) -> tuple[list[str], dict[str, Any]]:
    """(PowerContext's tool names as Codex lists them, Codex's result of calling `list_scopes`)."""
    with AppServer([str(CODEX)], env, home.workspace) as server:
        statuses = server.call("mcpServerStatus/list", {})["data"]
        [status] = [item for item in statuses if item["name"] == "powercontext"]
        thread = server.call("thread/start", {"cwd": str(home.workspace)})["thread"]["id"]
        call = {"threadId": thread, "server": "powercontext", "tool": "list_scopes", "arguments": {}}
        return sorted(status["tools"]), server.call("mcpServer/tool/call", call)


@pytest.mark.parametrize("token_env", ["POWERCONTEXT_TOKEN", "MY_PC_TOKEN"])
def test_codex_starts_the_registered_mcp_server_and_it_carries_the_token(
    token_env: str, start_server: Callable[..., LiveServer], home: CodexHome
) -> None:
    server = start_server(POWERCONTEXT_SERVER_AUTH_TOKEN=TOKEN)
    mcp = codex_setup.mcp_server(sys.executable, server.base_url, token_env)
    codex_setup.setup(home.env(), home.workspace, sys.executable, HookSettings(url=server.base_url), mcp)
    assert TOKEN not in home.config.read_text(encoding="utf-8") + home.hooks.read_text(encoding="utf-8")

    assert httpx.get(f"{server.base_url}/v1/scopes").status_code == 401  # no token, no answer

    tools, result = list_scopes_through_codex(home, home.env(**{token_env: TOKEN}))

    assert {"prepare_context", "remember", "search_memory"} <= set(tools)
    assert not result.get("isError") and "scopes" in str(result), result
