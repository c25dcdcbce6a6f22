"""docs/mcp.md: its host configurations start a working server, its command lines parse, its tool
table is the tool list.

A ```` ```json ```` or ```` ```console ```` block right after `<!-- mcp-test -->` is a host
configuration: an `mcpServers.powercontext` entry, or a `claude mcp add ... -- COMMAND...` line.
Each is started as written with the SDK's stdio client against a server that has the page's
token and Scope, its URL standing for the page's `http://127.0.0.1:8000`.
"""

from __future__ import annotations

import itertools
import json
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters

from powercontext_api.operations import BY_ID
from powercontext_client._mcp_tools import READ_ACCESS, TOOL_OPERATIONS
from powercontext_client.cli import build_parser

from ..conftest import LiveServer
from .conftest import POWERCONTEXT, ROOT, TIMEOUT_S, as_sent

PAGE = ROOT / "docs" / "mcp.md"
PAGE_URL = "http://127.0.0.1:8000"
PAGE_TOKEN = "pc_your_token"
PAGE_SCOPE = "project:demo"
_MARKED = re.compile(
    r"^<!-- mcp-test -->\n```(?P<lang>[a-z]+)\n(?P<body>.*?)\n```$", re.MULTILINE | re.DOTALL
)


@dataclass(frozen=True)
class HostEntry:
    """The command a host configuration starts."""

    source: str
    command: str
    args: list[str]
    env: dict[str, str] = field(default_factory=dict)


def documented_entries() -> list[HostEntry]:
    text = PAGE.read_text(encoding="utf-8")
    entries = []
    for match in _MARKED.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        if match["lang"] == "json":
            entry = json.loads(match["body"])["mcpServers"]["powercontext"]
            entries.append(HostEntry(f"line {line}", entry["command"], entry["args"], entry.get("env", {})))
            continue
        assert match["lang"] == "console", f"line {line}: a marked block is json or console"
        for command in match["body"].splitlines():
            argv = shlex.split(command.removeprefix("$ "))
            assert argv[:3] == ["claude", "mcp", "add"], f"line {line}: {command}"
            options, started = argv[3 : argv.index("--")], argv[argv.index("--") + 1 :]
            env = dict(value.split("=", 1) for flag, value in itertools.pairwise(options) if flag == "--env")
            entries.append(HostEntry(f"line {line}", started[0], started[1:], env))
    return entries


def test_the_page_marks_a_configuration_for_each_host() -> None:
    assert len(documented_entries()) == 3  # Claude Code, Cursor, any other host


@pytest.mark.parametrize("entry", documented_entries(), ids=lambda entry: entry.source)
async def test_a_documented_configuration_starts_a_working_server(
    entry: HostEntry, start_server: Callable[..., LiveServer]
) -> None:
    server = start_server(POWERCONTEXT_SERVER_AUTH_TOKEN=PAGE_TOKEN)
    with httpx.Client(base_url=server.base_url, headers={"Authorization": f"Bearer {PAGE_TOKEN}"}) as http:
        assert http.post("/v1/scopes", json={"scope_id": PAGE_SCOPE}).is_success
        remembered = {"scope_id": PAGE_SCOPE, "text": "The demo deploys from main."}
        assert http.post("/v1/memory/remember", json=remembered).is_success
        asked = as_sent({"scope_id": PAGE_SCOPE, "query": "deploys"})
        expected = http.post("/v1/context/prepare", json=asked).json()

    assert entry.command == "powercontext"  # as installed on the host's PATH: here, .venv/bin
    local = {PAGE_URL: server.base_url}
    params = StdioServerParameters(
        command=str(POWERCONTEXT),
        args=[local.get(arg, arg) for arg in entry.args],
        env={name: local.get(value, value) for name, value in entry.env.items()},
    )
    async with Client(params, read_timeout_seconds=TIMEOUT_S) as client:
        assert [tool.name for tool in (await client.list_tools()).tools] == list(TOOL_OPERATIONS)
        result = await client.call_tool("prepare_context", {"query": "deploys"})
    assert not result.is_error
    (item,) = result.content
    assert isinstance(item, types.TextContent)
    assert item.text == expected["content"]


def test_every_command_line_on_the_page_parses_and_each_url_has_its_command() -> None:
    text = PAGE.read_text(encoding="utf-8")
    # Each `$ ` line, and what it starts when it starts another command after `--`.
    commands = [shlex.split(line[2:].split("  #")[0]) for line in text.splitlines() if line.startswith("$ ")]
    started = [argv[argv.index("--") + 1 :] if "--" in argv else argv for argv in commands]
    runs = [argv for argv in started if argv[0] in ("powercontext", ".venv/bin/powercontext")]
    assert len(runs) == 4  # running, Claude Code, streamable HTTP, the Inspector
    ports = set()
    for argv in runs:
        args = build_parser({}).parse_args(argv[1:])  # argparse exits on a bad command line
        assert args.command == "mcp"
        if args.http is not None:
            ports.add(args.http[1])
    for port in re.findall(r"http://127\.0\.0\.1:(\d+)/mcp", text):
        assert int(port) in ports, f"no documented --http command serves port {port}"


def test_the_tools_table_is_the_tool_list_with_the_summaries() -> None:
    rows = re.findall(
        r"^\| `([a-z_]+)` \| (.*?) \| (yes|no) \|$", PAGE.read_text(encoding="utf-8"), re.MULTILINE
    )
    assert [name for name, _, _ in rows] == list(TOOL_OPERATIONS)
    for name, does, writes in rows:
        assert does == BY_ID[name].summary
        assert (writes == "yes") is (BY_ID[name].access not in READ_ACCESS)
