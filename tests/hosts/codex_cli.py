"""`powercontext setup|doctor codex` as a user runs them, for the Codex host tests."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.hosts.codex_session import CodexHome

SETUP_TIMEOUT = 120


def powercontext(
    home: CodexHome, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`powercontext ARGS` (the client's command line) in the workspace, with `home`'s environment
    plus this test run's import roots, so the hooks it writes run this checkout's host core."""
    run_env = env or home.env()
    roots = [run_env["PYTHONPATH"], os.environ.get("PYTHONPATH", "")]
    run_env = {**run_env, "PYTHONPATH": os.pathsep.join(root for root in roots if root)}
    return subprocess.run(
        [sys.executable, "-m", "powercontext_client", *args],
        cwd=home.workspace,
        env=run_env,
        capture_output=True,
        text=True,
        timeout=SETUP_TIMEOUT,
    )


def setup_codex(home: CodexHome, url: str, *flags: str, env: dict[str, str] | None = None) -> str:
    """`powercontext setup codex --url URL FLAGS`; it must succeed. Returns what it printed."""
    result = powercontext(home, "setup", "codex", "--url", url, *flags, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout
