"""`powercontext --version`, `python -m powercontext_client`, search scores and `create-scope --exist-ok`."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable

import pytest

import powercontext_client
from powercontext_client.cli import main

from ..conftest import LiveServer


def test_version_flag_prints_the_package_version_and_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"powercontext {powercontext_client.__version__}\n"
    assert powercontext_client.__version__ not in ("", "0+unknown")  # installed, so read from metadata


def test_python_m_powercontext_client_is_the_command(start_server: Callable[..., LiveServer]) -> None:
    module = [sys.executable, "-m", "powercontext_client"]
    version = subprocess.run([*module, "--version"], capture_output=True, text=True, timeout=60, check=True)
    assert version.stdout == f"powercontext {powercontext_client.__version__}\n"
    server = start_server()
    health = subprocess.run(
        [*module, "--url", server.base_url, "health"], capture_output=True, text=True, timeout=60, check=True
    )
    assert health.stdout == "live: ok\nready: ok\n"


def test_search_prints_each_hits_score(
    start_server: Callable[..., LiveServer], capsys: pytest.CaptureFixture[str]
) -> None:
    url = start_server().base_url
    for argv in (
        ["create-scope", "project:demo"],
        ["remember", "project:demo", "Releases are cut from main."],
    ):
        assert main(["--url", url, *argv]) == 0
    capsys.readouterr()
    assert main(["--url", url, "search-memory", "project:demo", "releases"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1:] == ["text: Releases are cut from main.", "score: 0.287682072"]


def test_create_scope_exist_ok_prints_the_existing_scope_and_exits_0(
    start_server: Callable[..., LiveServer], capsys: pytest.CaptureFixture[str]
) -> None:
    url = start_server().base_url
    assert main(["--url", url, "create-scope", "project:demo", "--title", "First"]) == 0
    first = capsys.readouterr().out
    assert main(["--url", url, "create-scope", "project:demo", "--title", "Second"]) == 1
    assert "HTTP 409 scope_exists" in capsys.readouterr().err
    assert main(["--url", url, "create-scope", "project:demo", "--title", "Second", "--exist-ok"]) == 0
    assert capsys.readouterr().out == first  # the existing Scope, unchanged
