"""Claude Code: the `UserPromptSubmit` and `Stop` command hooks in its user settings, and the MCP
server registered through Claude Code's own `claude mcp` command.

Claude Code passes each hook one JSON object on stdin (`prompt`, `cwd`, `session_id`,
`transcript_path`, and on `Stop` also `last_assistant_message`) and adds the `additionalContext` of
a `UserPromptSubmit` answer to the model's context unchanged (docs/claude-code.md shows where).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .hook import HostAdapter, Turn

SETTINGS_ENV = "CLAUDE_CONFIG_DIR"
EVENTS = {"prompt": "UserPromptSubmit", "stop": "Stop"}
MCP_NAME = "powercontext"
# Claude Code 2.1.328 passes additional context of 10,241 characters whole, but replaced 12,000 with
# a 2 KB preview and a file path: a larger budget would lose the text, so setup refuses it.
MAX_CONTEXT_BYTES = 10_000
_TAIL_START = 256 * 1024  # transcripts grow to megabytes: read the end first


def context_output(content: str) -> dict[str, Any]:
    return {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": content}}


def completed_turn(payload: Mapping[str, Any]) -> Turn | None:
    """The turn that just ended: the last prompt the user typed, read from the transcript, and the
    final reply (the event's `last_assistant_message`, else the transcript's last assistant text,
    since Claude Code may not have flushed the reply's line when the hook starts)."""
    path = payload.get("transcript_path")
    if not isinstance(path, str) or not path:
        return None
    from .entries import recorded_time  # the stop hook's detached process only

    user, assistant, sent = _last_exchange(Path(path))
    final = payload.get("last_assistant_message")
    if isinstance(final, str) and final.strip():
        assistant = final
    if user is None:
        return None
    return Turn(user, assistant or "", recorded_time(sent))


def _last_exchange(path: Path) -> tuple[str | None, str | None, object]:
    """(last user prompt, last assistant text after it, the prompt line's `timestamp`) from the end
    of a JSON Lines transcript."""
    size = path.stat().st_size
    window = _TAIL_START
    while True:
        start = max(0, size - window)
        with path.open("rb") as handle:
            handle.seek(start)
            data = handle.read()
        lines = data.split(b"\n")[1 if start else 0 :]  # the first line of a window may be cut
        user, assistant, sent = _scan(lines)
        if user is not None or start == 0:
            return user, assistant, sent
        window *= 4


def _scan(lines: list[bytes]) -> tuple[str | None, str | None, object]:
    assistant: str | None = None
    for raw in reversed(lines):
        try:
            entry = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(entry, dict) or entry.get("isSidechain") or entry.get("isMeta"):
            continue
        message = entry.get("message")
        if not isinstance(message, dict):
            continue
        text = _text(message.get("content"))
        if entry.get("type") == "assistant" and assistant is None and text:
            assistant = text
        elif entry.get("type") == "user" and text is not None:
            return text, assistant, entry.get("timestamp")
    return None, assistant, None


def _text(content: object) -> str | None:
    """A message's plain text; None for tool results and other non-text content."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        texts = [p for p in parts if isinstance(p, str)]
        return "\n".join(texts) if texts else None
    return None


ADAPTER = HostAdapter("Claude Code", context_output, completed_turn)


# Settings -----------------------------------------------------------------------------------------
def settings_path(environ: Mapping[str, str]) -> Path:
    """Claude Code's user settings: `$CLAUDE_CONFIG_DIR/settings.json`, else `~/.claude/settings.json`."""
    base = environ.get(SETTINGS_ENV) or str(Path(environ.get("HOME") or Path.home()) / ".claude")
    return Path(base) / "settings.json"


def is_ours(command: object) -> bool:
    return isinstance(command, str) and " -m powercontext_host claude-code " in f"{command} "


def with_hooks(settings: dict[str, Any], commands: Mapping[str, str], timeout: int) -> dict[str, Any]:
    """`settings` with PowerContext's hooks for exactly the events in `commands` (event -> command),
    every other key and hook kept in its place."""
    hooks = settings.get("hooks")
    hooks = dict(hooks) if isinstance(hooks, dict) else {}
    for event in EVENTS.values():
        groups = [_without_ours(g) for g in hooks.get(event, []) if isinstance(g, dict)]
        groups = [g for g in groups if g.get("hooks")]
        command = commands.get(event)
        if command is not None:
            groups.append({"hooks": [{"type": "command", "command": command, "timeout": timeout}]})
        if groups:
            hooks[event] = groups
        else:
            hooks.pop(event, None)
    updated = dict(settings)
    if hooks:
        updated["hooks"] = hooks
    else:
        updated.pop("hooks", None)
    return updated


def installed_commands(settings: Mapping[str, Any]) -> dict[str, str]:
    """event -> PowerContext's command found in `settings`."""
    found: dict[str, str] = {}
    hooks = settings.get("hooks")
    for event in EVENTS.values():
        for group in hooks.get(event, []) if isinstance(hooks, dict) else []:
            for hook in group.get("hooks", []) if isinstance(group, dict) else []:
                if isinstance(hook, dict) and is_ours(hook.get("command")):
                    found[event] = str(hook["command"])
    return found


def _without_ours(group: dict[str, Any]) -> dict[str, Any]:
    hooks = [h for h in group.get("hooks", []) if not (isinstance(h, dict) and is_ours(h.get("command")))]
    return {**group, "hooks": hooks}


# MCP ----------------------------------------------------------------------------------------------
def register_mcp(server: Mapping[str, Any], environ: Mapping[str, str]) -> str:
    """Register PowerContext's MCP server for the user through `claude mcp`; what happened, in words."""
    import shutil  # setup alone runs `claude`: every prompt's hook imports this module
    import subprocess

    claude = shutil.which("claude", path=environ.get("PATH"))
    config = json.dumps(server)
    manual = f"claude mcp add-json --scope user {MCP_NAME} '{config}'"
    if claude is None:
        return f"MCP server not registered: `claude` is not on PATH; run: {manual}"
    env = {**os.environ, **environ}
    subprocess.run(
        [claude, "mcp", "remove", "--scope", "user", MCP_NAME], env=env, capture_output=True, timeout=60
    )
    added = subprocess.run(
        [claude, "mcp", "add-json", "--scope", "user", MCP_NAME, config],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    if added.returncode != 0:
        return f"MCP server not registered (`claude mcp add-json` exited {added.returncode}); run: {manual}"
    return f"MCP server `{MCP_NAME}` registered for the user (claude mcp add-json --scope user)"


def unregister_mcp(environ: Mapping[str, str]) -> str:
    import shutil
    import subprocess

    claude = shutil.which("claude", path=environ.get("PATH"))
    if claude is None:
        return f"MCP server left as it is: `claude` is not on PATH; run: claude mcp remove --scope user {MCP_NAME}"
    removed = subprocess.run(
        [claude, "mcp", "remove", "--scope", "user", MCP_NAME],
        env={**os.environ, **environ},
        capture_output=True,
        timeout=60,
    )
    return f"MCP server `{MCP_NAME}` " + ("removed" if removed.returncode == 0 else "was not registered")
