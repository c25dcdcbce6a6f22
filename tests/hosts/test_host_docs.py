"""The host pages' command sessions replay: each `$ powercontext ...` line of a ```` ```console ````
block right after `<!-- host-docs-test -->` runs as a user would run it, in a fresh home directory
(`~`) and project directory (`~/work/zebra`), against a real server shown as http://127.0.0.1:8000,
and prints what the page shows (standard output, then standard error)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_cli_docs import sessions
from tests.hosts.conftest import REPO

PAGES = [REPO / "docs" / "claude-code.md", REPO / "docs" / "codex.md"]
CLIS = REPO / ".venv" / "host-clis" / "node_modules" / ".bin"
DOCUMENTED_URL = "http://127.0.0.1:8000"


@pytest.fixture
def backend() -> str:
    """Each page on a private SQLite server (the hosts speak only HTTP)."""
    return "sqlite"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_the_page_sessions_replay(page: Path, start_server: Callable[..., Any], tmp_path: Path) -> None:
    live_server = start_server().base_url
    blocks = sessions(page, "host-docs-test")
    assert blocks, f"{page.name} has no host-docs-test session"
    home = tmp_path / "home"
    project = home / "work" / "zebra"
    project.mkdir(parents=True)
    env = {key: os.environ[key] for key in ("LANG", "LC_ALL", "TMPDIR") if key in os.environ}
    env.update(HOME=str(home), POWERCONTEXT_URL=live_server, PATH=f"{CLIS}:{os.environ['PATH']}")
    for block in blocks:
        for command, expected in block:
            words = shlex.split(command)
            assert words[0] == "powercontext", command
            ran = subprocess.run(
                [sys.executable, "-m", "powercontext_client", *words[1:]],
                cwd=project,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            shown = (ran.stdout + ran.stderr).replace(live_server, DOCUMENTED_URL).replace(str(home), "~")
            assert shown.rstrip("\n") == expected, f"{page.name}: `{command}` printed:\n{shown}"
