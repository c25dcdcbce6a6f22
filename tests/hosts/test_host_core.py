"""The host core's own rules, without a host: which Scope applies, the settings a hook command
carries, reading a finished turn from a Claude Code transcript, and failing open on bad input.
(The real CLIs are driven in test_claude_code_e2e.py; these pin the rules they rely on.)"""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from powercontext_host import claude_code, hook, scope
from powercontext_host.settings import DEFAULT_ASSEMBLY, HookSettings, SettingsError, parse


def env(tmp_path: Path, **more: str) -> dict[str, str]:
    return {"HOME": str(tmp_path), **more}


def test_the_environment_wins_then_the_nearest_binding_then_none(tmp_path: Path) -> None:
    outer, inner = tmp_path / "work", tmp_path / "work" / "zebra" / "src"
    inner.mkdir(parents=True)
    environ = env(tmp_path)
    assert scope.choose(str(inner), environ) == scope.ScopeChoice(None, "none")
    scope.bind(outer, "project:outer", environ)
    scope.bind(tmp_path / "work" / "zebra", "project:zebra", environ)
    assert scope.choose(str(inner), environ) == ("project:zebra", f"binding of {tmp_path / 'work' / 'zebra'}")
    assert scope.choose(str(outer), environ).scope_id == "project:outer"
    assert scope.choose(str(inner), {**environ, "POWERCONTEXT_SCOPE": "team:x"}) == ("team:x", "environment")
    scope.bind(tmp_path / "work" / "zebra", None, environ)
    assert scope.choose(str(inner), environ).scope_id == "project:outer"
    bindings = json.loads((tmp_path / ".config" / "powercontext" / "bindings.json").read_text())
    assert bindings == {str(outer): "project:outer"}


@pytest.mark.parametrize("bad", ["", "   ", "a/b", "50%", "x\ny", "x" * 257])
def test_a_scope_id_the_contract_refuses_is_not_bound_nor_repeated(tmp_path: Path, bad: str) -> None:
    with pytest.raises(scope.ScopeError) as refused:
        scope.bind(tmp_path, bad, env(tmp_path))
    assert bad.strip() == "" or bad not in str(refused.value)
    assert not (tmp_path / ".config" / "powercontext" / "bindings.json").exists()


def test_settings_round_trip_through_the_command_flags() -> None:
    assert parse([]) == HookSettings()
    tuned = HookSettings("http://10.0.0.5:9000", "PC_TOKEN", 16000, None, 1.5, False)
    assert parse(tuned.flags()) == tuned
    assert parse(["--assembly", '{ "sections" : [] }']).assembly_json == '{"sections":[]}'
    assert HookSettings().assembly_json == DEFAULT_ASSEMBLY


@pytest.mark.parametrize(
    "flags",
    [
        ["--url", "ftp://x"],
        ["--url", "http://user:secret@host:1"],
        ["--max-bytes", "511"],
        ["--max-bytes", "32769"],
        ["--assembly", "[1]"],
        ["--timeout", "0"],
        ["--timeout", "11"],
        ["--token-env", "9X"],
    ],
)
def test_a_malformed_setting_is_refused_by_name(flags: list[str]) -> None:
    with pytest.raises(SettingsError, match=flags[0]) as refused:
        parse(flags)
    assert "secret" not in str(refused.value)


def _line(kind: str, content: object, **extra: object) -> str:
    return json.dumps({"type": kind, "message": {"role": kind, "content": content}, **extra}) + "\n"


def test_the_finished_turn_is_the_last_typed_prompt_and_the_final_reply(tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(
        _line("user", "an earlier question")
        + _line("assistant", [{"type": "text", "text": "an earlier answer"}])
        + _line("user", "What is the zebra code?", timestamp="2026-12-05T18:10:14.250Z")
        + _line("assistant", [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}])
        + _line("user", [{"type": "tool_result", "tool_use_id": "t1", "content": "4471"}])
        + _line("user", "a subagent's prompt", isSidechain=True)
        + _line("assistant", [{"type": "text", "text": "It is 4471."}])
        + "{not json\n"
    )
    event = {"transcript_path": str(transcript)}
    sent = datetime(2026, 12, 5, 18, 10, 14, 250000, tzinfo=UTC)  # the prompt line's own time
    assert claude_code.completed_turn(event) == hook.Turn("What is the zebra code?", "It is 4471.", sent)
    final = {**event, "last_assistant_message": "It is 4471, from the vault."}
    assert claude_code.completed_turn(final) == hook.Turn(
        "What is the zebra code?", "It is 4471, from the vault.", sent
    )


def test_a_prompt_far_back_in_a_long_transcript_is_still_found(tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    filler = _line("assistant", [{"type": "tool_use", "id": "t", "name": "Read", "input": {"x": "y" * 1000}}])
    transcript.write_text(_line("user", "the long task") + filler * 2000 + _line("assistant", "Finished."))
    assert transcript.stat().st_size > 1_000_000
    assert claude_code.completed_turn({"transcript_path": str(transcript)}) == hook.Turn(
        "the long task", "Finished."
    )


@pytest.mark.parametrize(
    ("stdin", "outcome"),
    [
        ("not json", "skipped: the hook's input is not JSON"),
        ("[1, 2]", "skipped: the hook's input is not a JSON object"),
        ('{"prompt": "  "}', "context skipped: empty-prompt"),
        ('{"prompt": "hello", "cwd": "/"}', "context skipped: no-scope (run `powercontext bind"),
    ],
)
def test_the_prompt_hook_fails_open_with_one_diagnostic(tmp_path: Path, stdin: str, outcome: str) -> None:
    out, err = io.StringIO(), io.StringIO()
    status = hook.main(["claude-code", "prompt"], io.StringIO(stdin), out, err, env(tmp_path))
    assert status == 0 and out.getvalue() == ""
    assert err.getvalue().startswith(f"powercontext: {outcome}") and err.getvalue().count("\n") == 1
    log = (tmp_path / ".local" / "state" / "powercontext" / "claude-code.log").read_text()
    assert log.endswith(err.getvalue().replace("powercontext: ", "prompt: "))
