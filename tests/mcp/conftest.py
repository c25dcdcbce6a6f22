"""Fixtures for the MCP server tests: a private PowerContext server and `powercontext mcp` clients.

The MCP server is only a client of the HTTP API, so it is tested against SQLite alone; the API's
own suites run every backend. The MCP server always runs as the installed `powercontext` command in
a subprocess, as a host starts it, and reaches the test server over HTTP.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client, StdioServerParameters

from ..conftest import LiveServer

ROOT = Path(__file__).resolve().parents[2]
POWERCONTEXT = Path(sys.executable).parent / "powercontext"
TIMEOUT_S = 60.0


@pytest.fixture
def backend() -> str:
    return "sqlite"


@pytest.fixture
def server(start_server: Callable[..., LiveServer]) -> LiveServer:
    return start_server()


def stdio_params(
    url: str | None, *mcp_args: str, env: Mapping[str, str] | None = None
) -> StdioServerParameters:
    """`powercontext [--url URL] mcp MCP_ARGS...`; the SDK passes on only a few safe variables besides `env`."""
    global_args = ["--url", url] if url is not None else []
    return StdioServerParameters(
        command=str(POWERCONTEXT), args=[*global_args, "mcp", *mcp_args], env=dict(env or {})
    )


def stdio_client(url: str | None, *mcp_args: str, env: Mapping[str, str] | None = None) -> Client:
    """The official SDK client, speaking stdio to a new `powercontext mcp` subprocess."""
    return Client(stdio_params(url, *mcp_args, env=env), read_timeout_seconds=TIMEOUT_S)


def api(server: LiveServer, method: str, path: str, body: Any = None) -> Any:
    """The JSON answer of one HTTP request to the test server; any status but 2xx fails the test."""
    response = httpx.request(method, server.base_url + path, json=body, timeout=TIMEOUT_S)
    assert response.is_success, response.text
    return response.json()


def create_scope(server: LiveServer, scope_id: str) -> None:
    api(server, "POST", "/v1/scopes", {"scope_id": scope_id})
