"""Codex runs a non-managed hook only once trusted: `powercontext setup codex` leaves the
PowerContext hooks trusted through Codex's app-server, and `powercontext doctor codex` reports a
hook Codex would skip.

Each test drives the real Codex CLI (`codex exec`, never with --dangerously-bypass-hook-trust) and
reads what Codex itself reports: the `hook: <event>` lines it prints when it runs a hook.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from hosts.core.powercontext_host import codex_setup
from hosts.core.powercontext_host.settings import HookSettings
from tests.hosts.codex.session import (
    CodexHome,
    powercontext,
    run_exec,
    setup_codex,
)
from tests.hosts.fakes import unused_port_url

PROMPT = "Which checks run before a release?"


def hooks_run(stderr: str) -> list[str]:
    """The hook events Codex reports it ran (it says nothing about a hook it skipped)."""
    return [
        line.split(":", 1)[1].strip()
        for line in stderr.splitlines()
        if line.startswith("hook: ") and line.count(" ") == 1
    ]


def doctor_trust_lines(home: CodexHome) -> list[str]:
    result = powercontext(home, "doctor", "codex")
    return [line for line in result.stdout.splitlines() if "trust:" in line]


def test_plain_exec_after_setup_runs_both_hooks(home: CodexHome) -> None:
    printed = setup_codex(home, unused_port_url())

    assert "Codex now trusts the 2 PowerContext hooks (as /hooks would)" in printed
    assert hooks_run(run_exec(home, PROMPT).stderr) == ["UserPromptSubmit", "Stop"]
    assert doctor_trust_lines(home) == [
        "ok    trust: UserPromptSubmit: trusted",
        "ok    trust: Stop: trusted",
    ]


def test_codex_skips_an_untrusted_hook_without_a_word_and_doctor_says_what_to_do(home: CodexHome) -> None:
    commands = codex_setup.hook_commands(sys.executable, HookSettings(url=unused_port_url()))
    for path, text in codex_setup.planned_files(home.codex_home, commands, 7, None).items():
        assert text is not None
        path.write_text(text, encoding="utf-8")  # installed, never trusted

    assert hooks_run(run_exec(home, PROMPT).stderr) == []
    lines = doctor_trust_lines(home)
    assert len(lines) == 2
    assert all(line.startswith("FAIL") and "untrusted" in line and "/hooks" in line for line in lines)


def test_doctor_reports_a_hook_modified_after_it_was_trusted_and_setup_trusts_it_again(
    home: CodexHome,
) -> None:
    url = unused_port_url()
    setup_codex(home, url)
    document = json.loads(home.hooks.read_text(encoding="utf-8"))
    handler = document["hooks"]["UserPromptSubmit"][0]["hooks"][0]
    handler["command"] += " --max-bytes 4000"
    home.hooks.write_text(json.dumps(document), encoding="utf-8")

    assert hooks_run(run_exec(home, PROMPT).stderr) == ["Stop"]
    [failed] = [line for line in doctor_trust_lines(home) if line.startswith("FAIL")]
    assert failed.startswith("FAIL  trust: UserPromptSubmit: modified since it was trusted")
    assert "/hooks" in failed

    setup_codex(home, url)
    assert hooks_run(run_exec(home, PROMPT).stderr) == ["UserPromptSubmit", "Stop"]
    assert all(line.startswith("ok") for line in doctor_trust_lines(home))


def test_setup_trusts_only_its_own_hooks(home: CodexHome, tmp_path: Path) -> None:
    marker = tmp_path / "user-hook-ran"
    user_hook = {"type": "command", "command": f"touch {marker}"}
    home.hooks.write_text(json.dumps({"hooks": {"Stop": [{"hooks": [user_hook]}]}}), encoding="utf-8")

    setup_codex(home, unused_port_url())

    assert hooks_run(run_exec(home, PROMPT).stderr) == ["UserPromptSubmit", "Stop"]
    assert not marker.exists()  # the user's own hook is still theirs to trust


def test_without_codex_on_path_setup_writes_the_hooks_and_says_exactly_what_to_do(home: CodexHome) -> None:
    env = home.env(PATH=str(Path(sys.executable).parent) + ":/usr/bin:/bin")
    result = powercontext(home, "setup", "codex", "--url", unused_port_url(), env=env)

    assert result.returncode == 1
    assert (
        "NOT DONE: the codex command was not found on PATH: start `codex` in this workspace, type /hooks"
        in result.stdout
    )
    assert "powercontext_host codex prompt" in home.hooks.read_text(encoding="utf-8")
    assert hooks_run(run_exec(home, PROMPT).stderr) == []  # written, not trusted: Codex skips them


def test_when_codex_cannot_answer_setup_says_exactly_what_to_do(home: CodexHome, tmp_path: Path) -> None:
    """An app-server that dies at once (a broken install) leaves the files written and names the step."""
    broken = tmp_path / "broken-bin"
    broken.mkdir()
    (broken / "codex").write_text("#!/bin/sh\nexit 3\n", encoding="utf-8")
    (broken / "codex").chmod(0o755)
    env = home.env(PATH=f"{broken}:{Path(sys.executable).parent}:/usr/bin:/bin")

    result = powercontext(home, "setup", "codex", "--url", unused_port_url(), env=env)

    assert result.returncode == 1
    assert (
        "NOT DONE: codex app-server exited before answering initialize: start `codex` in this "
        "workspace, type /hooks and trust the PowerContext hooks (UserPromptSubmit and Stop)"
    ) in result.stdout
    assert "powercontext_host codex prompt" in home.hooks.read_text(encoding="utf-8")
