"""The two Codex files `powercontext setup codex` changes, edited without disturbing anything else.

`hooks.json` (under CODEX_HOME): the PowerContext command handlers for UserPromptSubmit and Stop.
Codex names a hook by its place ("<file>:<event>:<group>:<handler>") and trusts it by that name, so
an existing PowerContext handler is replaced where it stands, a new one goes into a new group at the
end, and removing one never shifts a hook of the user's (a group left empty in the middle stays).

`config.toml`: the `[mcp_servers.powercontext]` table only. Python reads TOML but cannot write it,
so the table's own lines are replaced (or appended) as text, and the result is parsed again: unless
everything but that table is exactly what it was, nothing is written.
"""

from __future__ import annotations

import copy
import re
import tomllib
from collections.abc import Mapping, Sequence
from typing import Any

HOOK_EVENTS = {"prompt": "UserPromptSubmit", "stop": "Stop"}
# A handler is PowerContext's when its command runs this module for Codex.
OWN_COMMAND = re.compile(r"(^|\s)-m\s+powercontext_host\s+codex\s")
MCP_NAME = "powercontext"
# Codex cuts a hook's additionalContext above ~2,500 tokens (about 10 KB) and spills the rest to a
# file; 0 turns that off so the prepared text reaches the model whole up to max_bytes (32 KiB).
NO_SPILL = 0
_HEADER = re.compile(r"^\s*\[\[?([^\]]*)\]\]?\s*(#.*)?$")
_KEY_PART = re.compile(r'\s*("(?:[^"\\]|\\.)*"|\'[^\']*\'|[A-Za-z0-9_-]+)\s*(\.|$)')


class SettingsConflict(Exception):
    """A settings file is in a shape this module will not edit; nothing was written."""


def hook_handler(event: str, command: str, timeout_seconds: int) -> dict[str, Any]:
    """The hooks.json handler for one PowerContext hook (`event` is prompt or stop)."""
    handler: dict[str, Any] = {"type": "command", "command": command, "timeout": timeout_seconds}
    if event == "prompt":
        handler["additionalContextLimit"] = NO_SPILL
    return handler


def is_own_handler(handler: object) -> bool:
    return (
        isinstance(handler, dict)
        and handler.get("type") == "command"
        and isinstance(handler.get("command"), str)
        and bool(OWN_COMMAND.search(handler["command"]))
    )


def merge_hooks(document: Mapping[str, Any], handlers: Mapping[str, dict[str, Any]]) -> dict[str, Any]:
    """`document` (hooks.json) with exactly one PowerContext handler per event in `handlers` (keyed
    prompt/stop) and none for the other events; the user's hooks keep their places."""
    result = copy.deepcopy(dict(document))
    events = result.setdefault("hooks", {})
    if not isinstance(events, dict):
        raise SettingsConflict("hooks.json: `hooks` is not an object")
    for event, codex_event in HOOK_EVENTS.items():
        groups = events.get(codex_event, [])
        if not isinstance(groups, list):
            raise SettingsConflict(f"hooks.json: hooks.{codex_event} is not a list")
        wanted = handlers.get(event)
        placed = False
        for group in groups:
            inner = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(inner, list):
                continue
            kept = []
            for handler in inner:
                if not is_own_handler(handler):
                    kept.append(handler)
                elif wanted is not None and not placed:
                    kept.append(wanted)
                    placed = True
            group["hooks"] = kept
        if wanted is not None and not placed:
            groups.append({"hooks": [wanted]})
        _drop_trailing_empty(groups)
        if groups:
            events[codex_event] = groups
        else:
            events.pop(codex_event, None)
    return result


def own_commands(document: Mapping[str, Any]) -> dict[str, str]:
    """The command of the first PowerContext handler of each event (prompt/stop) in `document`."""
    events = document.get("hooks")
    found: dict[str, str] = {}
    for event, codex_event in HOOK_EVENTS.items():
        groups = events.get(codex_event) if isinstance(events, dict) else None
        for group in groups if isinstance(groups, list) else []:
            inner = group.get("hooks") if isinstance(group, dict) else None
            for handler in inner if isinstance(inner, list) else []:
                if is_own_handler(handler):
                    found.setdefault(event, handler["command"])
    return found


def remove_hooks(document: Mapping[str, Any]) -> dict[str, Any]:
    """`document` without any PowerContext handler."""
    return merge_hooks(document, {})


def is_empty(document: Mapping[str, Any]) -> bool:
    """Nothing left in hooks.json worth a file."""
    return not any(value for key, value in document.items() if key != "hooks") and not document.get("hooks")


def _drop_trailing_empty(groups: list[Any]) -> None:
    """Empty groups at the end go; one in the middle stays, keeping later hooks' names (and trust)."""
    while (
        groups
        and isinstance(groups[-1], dict)
        and groups[-1].get("hooks") == []
        and set(groups[-1]) <= {"hooks", "matcher"}
    ):
        groups.pop()


def mcp_table(command: str, args: Sequence[str], env_vars: Sequence[str]) -> dict[str, Any]:
    """The `[mcp_servers.powercontext]` table: Codex starts `command args` and passes it the
    environment variables named in `env_vars` (the token's name, never its value)."""
    return {"command": command, "args": list(args), "env_vars": list(env_vars)}


def set_mcp_server(text: str, table: Mapping[str, Any] | None) -> str:
    """config.toml `text` with `[mcp_servers.powercontext]` set to `table` (None: removed)."""
    before = _parse(text)
    servers = before.get("mcp_servers", {})
    exists = isinstance(servers, dict) and MCP_NAME in servers
    lines = text.splitlines(keepends=True)
    span = _table_span(lines)
    if exists and span is None:
        raise SettingsConflict(
            "config.toml defines mcp_servers.powercontext other than as a [mcp_servers.powercontext] "
            "table: edit or remove it by hand, then run setup again"
        )
    eol = "\r\n" if "\r\n" in text else "\n"  # the file's own line ends
    block = [] if table is None else _render_table(table, eol)
    if span is None:
        if table is None:
            return text
        ended = text.endswith("\n")
        prefix = "" if not text or text.endswith(eol + eol) else (eol if ended else eol + eol)
        updated = text + prefix + "".join(block)
    else:
        start, end = span
        head, tail = lines[:start], lines[end:]
        if block and tail and tail[0].strip():
            block.append(eol)
        if not block and head and not head[-1].strip() and (not tail or not tail[0].strip()):
            head.pop()  # the blank line that set the removed table apart
        updated = "".join(head + block + tail)
    try:
        after = tomllib.loads(updated)
    except tomllib.TOMLDecodeError:
        after = {"": "the edit broke the file"}
    _check_only_table_changed(before, after, table)
    return updated


def _table_span(lines: list[str]) -> tuple[int, int] | None:
    """The lines of [mcp_servers.powercontext] and its sub-tables, up to the next other table
    (a blank or comment line just before that header stays with it)."""
    start = end = None
    for index, line in enumerate(lines):
        match = _HEADER.match(line)
        if not match:
            continue
        ours = _header_path(match.group(1))[:2] == ["mcp_servers", MCP_NAME]
        if ours and start is None:
            start = index
        elif not ours and start is not None:
            end = index
            break
    if start is None:
        return None
    end = len(lines) if end is None else end
    while end > start + 1 and (not lines[end - 1].strip() or lines[end - 1].lstrip().startswith("#")):
        end -= 1
    return start, end


def _header_path(header: str) -> list[str]:
    parts, rest = [], header
    while rest.strip():
        match = _KEY_PART.match(rest)
        if not match:
            return []
        key = match.group(1)
        parts.append(tomllib.loads(f"k = {key}")["k"] if key[0] in "\"'" else key)
        rest = rest[match.end() :]
    return parts


def _render_table(table: Mapping[str, Any], eol: str) -> list[str]:
    lines = [f"[mcp_servers.{MCP_NAME}]{eol}"]
    for key, value in table.items():
        rendered = (
            "[" + ", ".join(_toml_string(item) for item in value) + "]"
            if isinstance(value, list)
            else _toml_string(value)
        )
        lines.append(f"{key} = {rendered}{eol}")
    return lines


def _toml_string(value: str) -> str:
    """A TOML basic string: quote and backslash escaped, every control character as \\uXXXX."""
    out = []
    for char in value:
        if char in '"\\':
            out.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04X}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _parse(text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SettingsConflict(
            f"config.toml is not valid TOML ({exc}): fix it, then run setup again"
        ) from None


def _check_only_table_changed(
    before: dict[str, Any], after: dict[str, Any], table: Mapping[str, Any] | None
) -> None:
    expected = copy.deepcopy(before)
    servers = expected.setdefault("mcp_servers", {})
    if table is None:
        servers.pop(MCP_NAME, None)
        if not servers:
            expected.pop("mcp_servers")
    else:
        servers[MCP_NAME] = dict(table)
    if after.get("mcp_servers") == {} and "mcp_servers" not in expected:
        after = {key: value for key, value in after.items() if key != "mcp_servers"}
    if after != expected:
        raise SettingsConflict(
            "config.toml: the edit of [mcp_servers.powercontext] would have changed other settings, "
            "so nothing was written; add the table by hand (see docs/codex.md)"
        )
