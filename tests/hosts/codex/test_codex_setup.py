"""`powercontext setup codex` writes Codex's settings without disturbing the user's: run twice it
leaves one hook per event, the user's model provider tables byte for byte, and Codex still works
on them; `--remove` takes out exactly what setup put in."""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path

import pytest

from tests.hosts.codex.session import (
    CodexHome,
    model_requests,
    powercontext,
    run_exec,
    setup_codex,
)
from tests.hosts.fakes import RecordingServer, unused_port_url

URL = unused_port_url()
USER_HOOK = {"type": "command", "command": "true # the user's own", "timeout": 5}


@pytest.fixture
def home(home: CodexHome) -> CodexHome:
    """The user's home, with a hook of their own already there."""
    user_hooks = {"hooks": {"UserPromptSubmit": [{"hooks": [USER_HOOK]}]}, "description": "mine"}
    home.hooks.write_text(json.dumps(user_hooks), encoding="utf-8")
    return home


def own_handlers(home: CodexHome, event: str) -> list[dict[str, object]]:
    groups = json.loads(home.hooks.read_text(encoding="utf-8"))["hooks"].get(event, [])
    return [
        handler for group in groups for handler in group["hooks"] if "powercontext_host" in handler["command"]
    ]


def test_setup_twice_leaves_one_hook_per_event_and_the_users_settings_intact(
    home: CodexHome, model: RecordingServer
) -> None:
    user_config = home.config.read_text(encoding="utf-8")

    first = setup_codex(home, URL)
    after_first = (home.hooks.read_bytes(), home.config.read_bytes())
    second = setup_codex(home, URL)

    assert first.splitlines()[:2] == [
        f"updated: {home.hooks} (UserPromptSubmit, Stop hooks)",
        f"updated: {home.config} (MCP server `powercontext`)",
    ]
    assert second.splitlines()[:2] == [
        f"unchanged: {home.hooks} (UserPromptSubmit, Stop hooks)",
        f"unchanged: {home.config} (MCP server `powercontext`)",
    ]
    assert (home.hooks.read_bytes(), home.config.read_bytes()) == after_first
    assert len(own_handlers(home, "UserPromptSubmit")) == 1 and len(own_handlers(home, "Stop")) == 1
    hooks = json.loads(home.hooks.read_text(encoding="utf-8"))
    assert hooks["hooks"]["UserPromptSubmit"][0]["hooks"] == [USER_HOOK] and hooks["description"] == "mine"
    config = home.config.read_text(encoding="utf-8")
    assert config.startswith(user_config)  # every byte the user wrote, comments and order included
    assert tomllib.loads(config)["mcp_servers"]["powercontext"] == {
        "command": sys.executable,
        "args": ["-m", "powercontext_client", "--url", URL, "mcp"],
        "env_vars": ["POWERCONTEXT_TOKEN"],
    }
    assert second.splitlines()[-1] == "undo: powercontext setup codex --remove"
    run_exec(home, "Still on my own provider?")
    assert model_requests(model)  # Codex still reaches the user's provider


def test_setup_updates_its_hook_in_place_and_no_capture_removes_the_stop_hook(home: CodexHome) -> None:
    setup_codex(home, URL)
    setup_codex(home, URL, "--max-bytes", "4000", "--no-capture")

    prompt_groups = json.loads(home.hooks.read_text(encoding="utf-8"))["hooks"]["UserPromptSubmit"]
    assert [len(group["hooks"]) for group in prompt_groups] == [1, 1]
    assert "--max-bytes 4000" in prompt_groups[1]["hooks"][0]["command"]
    assert own_handlers(home, "Stop") == []


def test_remove_takes_out_what_setup_added_and_nothing_else(home: CodexHome) -> None:
    user_hooks, user_config = home.hooks.read_text(encoding="utf-8"), home.config.read_text(encoding="utf-8")
    setup_codex(home, URL)

    removed = powercontext(home, "setup", "codex", "--remove")

    assert removed.returncode == 0 and removed.stdout.splitlines() == [
        f"removed PowerContext hooks from {home.hooks}",
        f"MCP server `powercontext` removed from {home.config}",
    ]
    assert json.loads(home.hooks.read_text(encoding="utf-8")) == json.loads(user_hooks)
    config = home.config.read_text(encoding="utf-8")
    assert config.startswith(user_config)
    assert "powercontext" not in tomllib.loads(config).get("mcp_servers", {})
    assert powercontext(home, "setup", "codex", "--remove").stdout.splitlines() == [
        f"no PowerContext hooks in {home.hooks}",
        f"MCP server `powercontext` was not registered in {home.config}",
    ]


def test_a_config_setup_cannot_edit_safely_is_left_untouched(home: CodexHome) -> None:
    inline = 'mcp_servers.powercontext = { command = "mine" }\n' + home.config.read_text(encoding="utf-8")
    home.config.write_text(inline, encoding="utf-8")
    hooks_before = home.hooks.read_bytes()

    result = powercontext(home, "setup", "codex", "--url", URL)

    assert result.returncode == 2 and "edit or remove it by hand" in result.stderr
    assert home.config.read_text(encoding="utf-8") == inline and home.hooks.read_bytes() == hooks_before


def test_a_config_with_crlf_line_ends_keeps_them(home: CodexHome) -> None:
    """Setup's own edit keeps CR LF (Codex's trust write, skipped here, rewrites line ends itself)."""
    crlf = home.config.read_bytes().replace(b"\n", b"\r\n")
    home.config.write_bytes(crlf)
    without_codex = home.env(PATH=str(Path(sys.executable).parent) + ":/usr/bin:/bin")

    powercontext(home, "setup", "codex", "--url", URL, env=without_codex)

    config = home.config.read_bytes()
    assert config.startswith(crlf) and b"[mcp_servers.powercontext]" in config
    assert config.count(b"\n") == config.count(b"\r\n")
