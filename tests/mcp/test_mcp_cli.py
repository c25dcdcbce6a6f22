"""The `powercontext mcp` command line: its options, and what it says without the MCP SDK."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from powercontext_client.cli import main

from .conftest import POWERCONTEXT, TIMEOUT_S

# Runs the command with the SDK's modules made unimportable, as in an install without the extra.
_WITHOUT_SDK = (
    "import sys\n"
    "for name in ('mcp', 'mcp_types'):\n"
    "    sys.modules[name] = None\n"
    "from powercontext_client.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def without_sdk(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _WITHOUT_SDK, *args], capture_output=True, text=True, timeout=TIMEOUT_S
    )


def test_without_the_sdk_help_works_and_serving_says_how_to_install_it() -> None:
    helped = without_sdk("mcp", "--help")
    assert helped.returncode == 0
    assert "--scope SCOPE_ID" in helped.stdout and "--http [HOST:]PORT" in helped.stdout
    refused = without_sdk("--url", "http://127.0.0.1:9", "mcp", "--scope", "project:demo")
    assert refused.returncode == 1
    assert refused.stdout == ""
    assert refused.stderr.startswith("powercontext: `powercontext mcp` needs the MCP SDK (the mcp package)")
    assert refused.stderr.endswith(
        "install it with: pip install './client[mcp]' (in a PowerContext checkout)\n"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["mcp", "--scope", "a/b"], "powercontext: invalid --scope: scope_id: must not be blank or hold /"),
        (["mcp", "--scope", " "], "powercontext: invalid --scope: scope_id: must not be blank"),
        (
            ["mcp", "--http", "80000"],
            "argument --http: '80000' is not [HOST:]PORT with a port from 0 to 65535",
        ),
        (["mcp", "--http", "::1:8000"], "argument --http: '::1:8000' is not [HOST:]PORT"),
    ],
)
def test_a_bad_scope_or_address_is_a_usage_error(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(args) == 2
    assert message in capsys.readouterr().err


def test_a_port_in_use_is_one_line_and_exit_1() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        refused = subprocess.run(
            [POWERCONTEXT, "mcp", "--http", f"127.0.0.1:{port}"],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
        )
    assert refused.returncode == 1
    assert refused.stderr == f"powercontext: cannot listen on 127.0.0.1:{port}: Address already in use\n"
