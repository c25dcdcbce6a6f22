"""The Codex parts of `powercontext setup codex` and `powercontext doctor codex`.

Setup writes the PowerContext hooks into `$CODEX_HOME/hooks.json` (default ~/.codex), registers the
MCP server as `[mcp_servers.powercontext]` in `$CODEX_HOME/config.toml`, then has Codex trust the
hooks through its app-server (`codex_trust`). Every file is written whole to a temporary file and
moved into place, and only when its content changes, so running setup twice changes nothing the
second time. Doctor says whether the hooks are installed and whether Codex will run them.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import codex_files, codex_trust

HOOKS_FILE = "hooks.json"
CONFIG_FILE = "config.toml"
# Codex's own limit on a hook run, a backstop: the hook stops itself at its configured deadline.
HOOK_TIMEOUT_SECONDS = 30
UNDO_COMMAND = "powercontext setup codex --remove"
DEFAULT_TOKEN_ENV = "POWERCONTEXT_TOKEN"


@dataclass(frozen=True)
class Check:
    """One doctor line: `ok` or not, and what it found."""

    name: str
    ok: bool
    detail: str


@dataclass(frozen=True)
class McpServer:
    """How Codex starts `powercontext mcp`: `command args`, passing the variables in `env_vars`."""

    command: str
    args: tuple[str, ...]
    env_vars: tuple[str, ...]


@dataclass(frozen=True)
class SetupResult:
    changed: tuple[Path, ...]
    trust: codex_trust.TrustResult
    lines: tuple[str, ...] = field(default=())


def mcp_server(python: str, url: str, token_env: str = DEFAULT_TOKEN_ENV) -> McpServer:
    """`python -m powercontext_client --url URL mcp`, which reads its token from POWERCONTEXT_TOKEN.
    Codex passes a server only the variables its `env_vars` names, under their own names, so a
    token kept in another variable is handed over by a one-line shell that renames it (the name
    is checked to be a plain variable name; the value is never written anywhere)."""
    command = [python, "-m", "powercontext_client", "--url", url, "mcp"]
    if token_env == DEFAULT_TOKEN_ENV:
        return McpServer(python, tuple(command[1:]), (DEFAULT_TOKEN_ENV,))
    rename = f'{DEFAULT_TOKEN_ENV}="${{{token_env}}}" exec "$0" "$@"'
    return McpServer("/bin/sh", ("-c", rename, *command), (token_env,))


def codex_home(env: Mapping[str, str]) -> Path:
    """Where Codex keeps its settings: CODEX_HOME, else ~/.codex."""
    configured = env.get("CODEX_HOME")
    if configured:
        return Path(configured).expanduser()
    return Path(env.get("HOME") or Path.home()).expanduser() / ".codex"


def codex_command(env: Mapping[str, str]) -> list[str] | None:
    """The `codex` executable on the PATH of `env`, or None."""
    found = shutil.which("codex", path=env.get("PATH", os.defpath))
    return [found] if found else None


def hook_commands(python: str, hook_options: Sequence[str], capture: bool) -> dict[str, str]:
    """The shell command of each hook: `<python> -m powercontext_host codex <event> <options>`."""
    commands = {"prompt": shlex.join([python, "-m", "powercontext_host", "codex", "prompt", *hook_options])}
    if capture:
        commands["stop"] = shlex.join([python, "-m", "powercontext_host", "codex", "stop", *hook_options])
    return commands


def planned_files(home: Path, commands: Mapping[str, str], mcp: McpServer | None) -> dict[Path, str | None]:
    """The new text of each file setup changes (None: remove the file), checked before any write."""
    handlers = {
        event: codex_files.hook_handler(event, command, HOOK_TIMEOUT_SECONDS)
        for event, command in commands.items()
    }
    hooks_path, config_path = home / HOOKS_FILE, home / CONFIG_FILE
    hooks = codex_files.merge_hooks(_read_json(hooks_path), handlers)
    table = None if mcp is None else codex_files.mcp_table(mcp.command, mcp.args, mcp.env_vars)
    config = codex_files.set_mcp_server(_read_text(config_path), table)
    return {hooks_path: _json_text(hooks), config_path: config}


def setup(
    env: Mapping[str, str],
    cwd: Path,
    python: str,
    hook_options: Sequence[str],
    capture: bool = True,
    mcp: McpServer | None = None,
) -> SetupResult:
    """Install (or update) the hooks and the MCP server, then have Codex trust the hooks."""
    home = codex_home(env)
    commands = hook_commands(python, hook_options, capture)
    changed = _write_changed(planned_files(home, commands, mcp))
    trust = codex_trust.trust_hooks(
        codex_command(env),
        env,
        cwd,
        home / HOOKS_FILE,
        [commands[event] for event in ("prompt", "stop") if event in commands],
    )
    lines = [f"{'updated' if path.exists() else 'removed'} {path}" for path in changed] or [
        "Codex settings already up to date"
    ]
    lines.append(("" if trust.ok else "NOT DONE: ") + trust.message)
    lines.append(f"to undo: {UNDO_COMMAND}")
    return SetupResult(tuple(changed), trust, tuple(lines))


def undo(env: Mapping[str, str]) -> list[str]:
    """Remove the PowerContext hooks and MCP server from Codex's settings; say what changed."""
    home = codex_home(env)
    hooks_path, config_path = home / HOOKS_FILE, home / CONFIG_FILE
    planned: dict[Path, str | None] = {}
    if hooks_path.exists():
        remaining = codex_files.remove_hooks(_read_json(hooks_path))
        planned[hooks_path] = None if codex_files.is_empty(remaining) else _json_text(remaining)
    if config_path.exists():
        planned[config_path] = codex_files.set_mcp_server(_read_text(config_path), None)
    changed = _write_changed(planned)
    return [f"{'updated' if path.exists() else 'removed'} {path}" for path in changed] or ["nothing to undo"]


def installed_commands(home: Path) -> dict[str, str]:
    """The PowerContext hook commands hooks.json holds now, by event (prompt/stop)."""
    return codex_files.own_commands(_read_json(home / HOOKS_FILE))


def doctor_checks(env: Mapping[str, str], cwd: Path) -> list[Check]:
    """Is the prompt hook installed, and will Codex run each PowerContext hook (is it trusted)?"""
    home = codex_home(env)
    try:
        commands = installed_commands(home)
    except codex_files.SettingsConflict as exc:
        return [Check("hooks installed", False, str(exc))]
    if "prompt" not in commands:
        return [
            Check(
                "hooks installed",
                False,
                f"no PowerContext hook in {home / HOOKS_FILE}: run `powercontext setup codex`",
            )
        ]
    checks = [
        Check(
            "hooks installed",
            True,
            ", ".join(f"{codex_files.HOOK_EVENTS[e]}" for e in commands) + f" in {home / HOOKS_FILE}",
        )
    ]
    try:
        states = codex_trust.read_states(
            codex_command(env), env, cwd, home / HOOKS_FILE, list(commands.values())
        )
    except codex_trust.AppServerError as exc:
        return [
            *checks,
            Check("hooks trusted", False, f"cannot ask Codex ({exc}): {codex_trust.MANUAL_STEP}"),
        ]
    return [*checks, *(Check("hook trusted", state.runs, codex_trust.describe(state)) for state in states)]


def _read_json(path: Path) -> dict[str, Any]:
    text = _read_text(path)
    if not text.strip():
        return {}
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise codex_files.SettingsConflict(
            f"{path} is not valid JSON ({exc}): fix it, then run setup again"
        ) from None
    if not isinstance(document, dict):
        raise codex_files.SettingsConflict(f"{path} does not hold a JSON object")
    return document


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""


def _json_text(document: Mapping[str, Any]) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def _write_changed(planned: Mapping[Path, str | None]) -> list[Path]:
    """Write each file whose text differs (None: remove it); each write is atomic."""
    changed = []
    for path, text in planned.items():
        current = _read_text(path) if path.exists() else None
        if text == current:
            continue
        if text is None:
            path.unlink()
        else:
            _write_atomic(path, text)
        changed.append(path)
    return changed


def _write_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` through a temporary file in the same directory and os.replace: a
    failure leaves the old file; the old file's permissions are kept."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o600
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
