"""Codex runs a non-managed hook only once trusted: setup leaves the PowerContext hooks trusted
through Codex's app-server, and doctor reports a hook Codex would skip.

Each test drives the real Codex CLI (`codex exec`, never with --dangerously-bypass-hook-trust) and
reads what Codex itself reports: the `hook: <event>` lines it prints when it runs a hook.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from hosts.core.powercontext_host import codex
from tests.hosts.codex_session import CODEX, INSTALL_HINT, CodexHome, make_codex_home, run_exec
from tests.hosts.fakes import RecordingServer, responses_reply, unused_port_url

PROMPT = "Which checks run before a release?"
HOOK_OPTIONS = ["--url", unused_port_url(), "--timeout", "1"]


@pytest.fixture(autouse=True)
def codex_is_installed() -> None:
    """A missing CLI is a failure, not a skip: `make test` installs it."""
    assert CODEX.exists(), INSTALL_HINT


@pytest.fixture
def model() -> Iterator[RecordingServer]:
    with RecordingServer(responses_reply) as server:
        yield server


@pytest.fixture
def home(tmp_path: Path, model: RecordingServer) -> CodexHome:
    return make_codex_home(tmp_path, model)


def setup(home: CodexHome, **env: str) -> codex.SetupResult:
    return codex.setup(home.env(**env), home.workspace, sys.executable, HOOK_OPTIONS)


def hooks_run(stderr: str) -> list[str]:
    """The hook events Codex reports it ran (it says nothing about a hook it skipped)."""
    return [
        line.split(":", 1)[1].strip()
        for line in stderr.splitlines()
        if line.startswith("hook: ") and line.count(" ") == 1
    ]


def test_plain_exec_after_setup_runs_both_hooks(home: CodexHome) -> None:
    result = setup(home)

    assert result.trust.ok and result.trust.outcome == "trusted", result.trust.message
    assert hooks_run(run_exec(home, PROMPT).stderr) == ["UserPromptSubmit", "Stop"]


def test_codex_skips_an_untrusted_hook_without_a_word_and_doctor_says_what_to_do(home: CodexHome) -> None:
    commands = codex.hook_commands(sys.executable, HOOK_OPTIONS, capture=True)
    for path, text in codex.planned_files(home.codex_home, commands, None).items():
        assert text is not None
        path.write_text(text, encoding="utf-8")  # installed, never trusted

    assert hooks_run(run_exec(home, PROMPT).stderr) == []
    checks = codex.doctor_checks(home.env(), home.workspace)
    assert [check.ok for check in checks] == [True, False, False]
    assert all("untrusted" in check.detail and "/hooks" in check.detail for check in checks[1:])


def test_doctor_reports_a_hook_modified_after_it_was_trusted_and_setup_trusts_it_again(
    home: CodexHome,
) -> None:
    setup(home)
    document = json.loads(home.hooks.read_text(encoding="utf-8"))
    handler = document["hooks"]["UserPromptSubmit"][0]["hooks"][0]
    handler["command"] += " --max-bytes 4000"
    home.hooks.write_text(json.dumps(document), encoding="utf-8")

    assert hooks_run(run_exec(home, PROMPT).stderr) == ["Stop"]
    lines = [check for check in codex.doctor_checks(home.env(), home.workspace) if not check.ok]
    assert len(lines) == 1 and lines[0].detail.startswith("userPromptSubmit: modified since it was trusted")
    assert "/hooks" in lines[0].detail

    again = setup(home)
    assert again.trust.ok, again.trust.message
    assert hooks_run(run_exec(home, PROMPT).stderr) == ["UserPromptSubmit", "Stop"]
    assert all(check.ok for check in codex.doctor_checks(home.env(), home.workspace))


def test_setup_trusts_only_its_own_hooks(home: CodexHome, tmp_path: Path) -> None:
    marker = tmp_path / "user-hook-ran"
    user_hook = {"type": "command", "command": f"touch {marker}"}
    home.hooks.write_text(json.dumps({"hooks": {"Stop": [{"hooks": [user_hook]}]}}), encoding="utf-8")

    assert setup(home).trust.ok
    assert hooks_run(run_exec(home, PROMPT).stderr) == ["UserPromptSubmit", "Stop"]
    assert not marker.exists()  # the user's own hook is still theirs to trust


def test_without_codex_on_path_setup_writes_the_hooks_and_says_exactly_what_to_do(home: CodexHome) -> None:
    result = setup(home, PATH="/usr/bin:/bin")

    assert not result.trust.ok and result.trust.outcome == "codex-not-found"
    assert "type /hooks and trust the PowerContext hooks" in result.trust.message
    assert any(line.startswith("NOT DONE: ") and "/hooks" in line for line in result.lines)
    assert "powercontext_host codex prompt" in home.hooks.read_text(encoding="utf-8")
    assert hooks_run(run_exec(home, PROMPT).stderr) == []  # written, not trusted: Codex skips them
