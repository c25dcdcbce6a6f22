"""`powercontext mcp` under the MCP Inspector's CLI, the protocol's reference client (Node.js).

`make mcp-inspector` installs the pinned Inspector into .venv/mcp-inspector; POWERCONTEXT_MCP_INSPECTOR
may name another `mcp-inspector` executable. A missing Inspector fails these tests: it is never a skip.
The Inspector spawns `powercontext mcp` on stdio and speaks the initialize handshake most hosts use.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from powercontext_api.models import PrepareContextRequest
from powercontext_client._mcp_tools import TOOL_OPERATIONS

from ..conftest import LiveServer
from .conftest import DEFAULT_ASSEMBLY, POWERCONTEXT, ROOT, api, as_sent, create_scope

INSPECTOR_ENV = "POWERCONTEXT_MCP_INSPECTOR"
DEFAULT_INSPECTOR = ROOT / ".venv" / "mcp-inspector" / "node_modules" / ".bin" / "mcp-inspector"
EXIT_TOOL_ERROR = 5  # the Inspector's exit status for a call whose result has isError


@pytest.fixture(scope="module")
def inspector() -> Path:
    path = Path(os.environ.get(INSPECTOR_ENV) or DEFAULT_INSPECTOR)
    if not path.exists():
        pytest.fail(
            f"the MCP Inspector is not installed at {path}: run `make mcp-inspector` (or set {INSPECTOR_ENV})"
        )
    return path


def inspect(
    inspector: Path, server: LiveServer, home: Path, *options: str
) -> subprocess.CompletedProcess[str]:
    """One Inspector CLI run (`--format json`) against `powercontext --url SERVER mcp --scope project:demo`."""
    target = [str(POWERCONTEXT), "--url", server.base_url, "mcp", "--scope", "project:demo"]
    return subprocess.run(
        [str(inspector), "--cli", "--format", "json", *options, "--", *target],
        capture_output=True,
        text=True,
        timeout=120,
        # Its own state (catalog, secrets) goes under HOME: a fresh one per test, never the real one.
        env={**os.environ, "HOME": str(home)},
    )


def result_of(run: subprocess.CompletedProcess[str]) -> Any:
    return json.loads(run.stdout)["result"]


def test_the_inspector_lists_the_tools_with_the_request_schemas(
    inspector: Path, server: LiveServer, tmp_path: Path
) -> None:
    run = inspect(inspector, server, tmp_path, "--method", "tools/list")
    assert run.returncode == 0, run.stderr
    tools = result_of(run)["tools"]
    assert [tool["name"] for tool in tools] == list(TOOL_OPERATIONS)
    (prepare,) = [tool for tool in tools if tool["name"] == "prepare_context"]
    expected = PrepareContextRequest.model_json_schema()
    expected["properties"]["scope_id"]["default"] = "project:demo"
    expected["properties"]["assembly"]["default"] = DEFAULT_ASSEMBLY
    expected["required"].remove("scope_id")
    assert prepare["inputSchema"] == expected


def test_the_inspector_calls_prepare_and_gets_the_http_text(
    inspector: Path, server: LiveServer, tmp_path: Path
) -> None:
    create_scope(server, "project:demo")
    api(
        server,
        "POST",
        "/v1/memory/remember",
        {"scope_id": "project:demo", "text": "Staging resets every night."},
    )
    expected = api(
        server, "POST", "/v1/context/prepare", as_sent({"scope_id": "project:demo", "query": "staging reset"})
    )
    assert expected["status"] == "ready"
    run = inspect(
        inspector,
        server,
        tmp_path,
        "--method",
        "tools/call",
        "--tool-name",
        "prepare_context",
        "--tool-arg",
        "query=staging reset",
    )
    assert run.returncode == 0, run.stderr
    result = result_of(run)
    assert result["isError"] is False
    assert result["content"] == [{"type": "text", "text": expected["content"]}]


def test_the_inspector_sees_a_server_error_as_a_tool_error(
    inspector: Path, server: LiveServer, tmp_path: Path
) -> None:
    run = inspect(
        inspector,
        server,
        tmp_path,
        "--method",
        "tools/call",
        "--tool-name",
        "search_memory",
        "--tool-args-json",
        json.dumps({"scope_id": "project:nowhere", "query": "anything"}),
    )
    assert run.returncode == EXIT_TOOL_ERROR, run.stderr
    result = result_of(run)
    assert result["isError"] is True
    (item,) = result["content"]
    assert item["text"].startswith("HTTP 404 scope_not_found: The requested Scope was not found.")
