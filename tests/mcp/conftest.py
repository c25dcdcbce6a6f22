"""Fixtures for the MCP server tests: a private PowerContext server and `powercontext mcp` clients.

The MCP server is only a client of the HTTP API, so it is tested against SQLite alone; the API's
own suites run every backend. The MCP server always runs as the installed `powercontext` command in
a subprocess, as a host starts it, and reaches the test server over HTTP.
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client, StdioServerParameters

from powercontext_api.operations import HOST_DEFAULT_ASSEMBLY

from ..conftest import LiveServer

ROOT = Path(__file__).resolve().parents[2]
POWERCONTEXT = Path(sys.executable).parent / "powercontext"
TIMEOUT_S = 60.0
# What `powercontext mcp` gives prepare_context when a call sets no `assembly` (`--assembly`).
DEFAULT_ASSEMBLY: dict[str, Any] = json.loads(HOST_DEFAULT_ASSEMBLY)


def as_sent(body: Mapping[str, Any]) -> dict[str, Any]:
    """The prepare request `powercontext mcp` sends for the tool arguments `body`."""
    return {"assembly": DEFAULT_ASSEMBLY, **body}


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


_ADDRESS = re.compile(r"^powercontext mcp: streamable HTTP on (http://\S+/mcp)$", re.MULTILINE)


@contextlib.contextmanager
def mcp_http(server: LiveServer, log: Path, *mcp_args: str) -> Iterator[str]:
    """`powercontext mcp --http 0 MCP_ARGS...` (a free port on loopback) in front of `server`: its URL."""
    with log.open("wb") as stderr:
        process = subprocess.Popen(
            [POWERCONTEXT, "--url", server.base_url, "mcp", *mcp_args, "--http", "0"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    try:
        deadline = time.monotonic() + TIMEOUT_S
        while (found := _ADDRESS.search(log.read_text())) is None:
            assert process.poll() is None, f"powercontext mcp --http exited: {log.read_text()}"
            assert time.monotonic() < deadline, f"no address within {TIMEOUT_S} s: {log.read_text()}"
            time.sleep(0.05)
        yield found.group(1)
    finally:
        process.terminate()
        process.wait(timeout=TIMEOUT_S)
