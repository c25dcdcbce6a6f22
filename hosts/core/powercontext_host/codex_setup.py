"""The Codex parts of `powercontext setup codex` and `powercontext doctor codex`.

Setup writes the PowerContext hooks into `$CODEX_HOME/hooks.json` (default ~/.codex), registers the
MCP server as `[mcp_servers.powercontext]` in `$CODEX_HOME/config.toml`, then has Codex trust the
hooks through its app-server (`codex_trust`). Every file is written whole to a temporary file and
moved into place, and only when its content changes, so running setup twice changes nothing the
second time. Doctor says whether the hooks are installed and whether Codex will run them.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from . import codex_files, codex_trust, scope
from .files import write_atomically
from .settings import DEFAULT_TOKEN_ENV, HookSettings, from_arguments, parse

HOOKS_FILE = "hooks.json"
CONFIG_FILE = "config.toml"
UNDO_COMMAND = "powercontext setup codex --remove"


@dataclass(frozen=True)
class Check:
    """One doctor line: `ok` or not, and what it found."""

    ok: bool
    line: str


@dataclass(frozen=True)
class McpServer:
    """How Codex starts `powercontext mcp`: `command args`, passing the variables in `env_vars`."""

    command: str
    args: tuple[str, ...]
    env_vars: tuple[str, ...]


@dataclass(frozen=True)
class SetupResult:
    """The files setup changed, how trusting the hooks went, and what to print about both."""

    changed: tuple[Path, ...]
    trust: codex_trust.TrustResult
    lines: tuple[str, ...]


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


def hook_commands(python: str, settings: HookSettings) -> dict[str, str]:
    """The command of each hook, `<python> -m powercontext_host codex <event> <flags>`; no Stop
    hook when capture is off."""
    events = ("prompt", "stop") if settings.capture else ("prompt",)
    return {
        event: shlex.join([python, "-m", "powercontext_host", "codex", event, *settings.flags()])
        for event in events
    }


def planned_files(
    home: Path, commands: Mapping[str, str], timeout: int, mcp: McpServer | None
) -> dict[Path, str | None]:
    """The new text of each file setup changes, checked before any write. `timeout` is Codex's own
    limit on a hook run, a backstop: the hook keeps its own deadline."""
    handlers = {
        event: codex_files.hook_handler(event, command, timeout) for event, command in commands.items()
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
    settings: HookSettings,
    mcp: McpServer | None = None,
) -> SetupResult:
    """Install (or update) the hooks and the MCP server, then have Codex trust the hooks."""
    home = codex_home(env)
    hooks_path, config_path = home / HOOKS_FILE, home / CONFIG_FILE
    commands = hook_commands(python, settings)
    changed = _write_changed(planned_files(home, commands, int(settings.timeout) + 5, mcp))
    trust = codex_trust.trust_hooks(
        codex_trust.Installed(codex_command(env), env, cwd, hooks_path, tuple(commands.values()))
    )
    events = ", ".join(codex_files.HOOK_EVENTS[event] for event in commands)
    lines = [f"{_changed(hooks_path, changed)}: {hooks_path} ({events} hooks)"]
    if mcp is not None or config_path in changed:
        what = "MCP server `powercontext`" + ("" if mcp is not None else " removed")
        lines.append(f"{_changed(config_path, changed)}: {config_path} ({what})")
    lines.append(("" if trust.ok else "NOT DONE: ") + trust.message)
    return SetupResult(tuple(changed), trust, tuple(lines))


def remove(env: Mapping[str, str]) -> list[str]:
    """Take the PowerContext hooks and MCP server out of Codex's settings; say what changed."""
    home = codex_home(env)
    hooks_path, config_path = home / HOOKS_FILE, home / CONFIG_FILE
    planned: dict[Path, str | None] = {}
    if hooks_path.exists():
        remaining = codex_files.remove_hooks(_read_json(hooks_path))
        planned[hooks_path] = None if codex_files.is_empty(remaining) else _json_text(remaining)
    if config_path.exists():
        planned[config_path] = codex_files.set_mcp_server(_read_text(config_path), None)
    changed = _write_changed(planned)
    return [
        f"removed PowerContext hooks from {hooks_path}"
        if hooks_path in changed
        else f"no PowerContext hooks in {hooks_path}",
        f"MCP server `powercontext` removed from {config_path}"
        if config_path in changed
        else f"MCP server `powercontext` was not registered in {config_path}",
    ]


def run_setup(args: argparse.Namespace, environ: Mapping[str, str], out: TextIO) -> int:
    """`powercontext setup codex [--remove]`: print what changed. Exit 1 when Codex will not run
    the hooks (a line starting NOT DONE says what to do), 2 when nothing could be changed."""
    from .cli import mcp_available  # cli imports this module

    try:
        if args.remove:
            lines = remove(environ)
        else:
            lines, ok = _install(from_arguments(args), args.scope, mcp_available(), environ)
    except codex_files.SettingsConflict as exc:
        print(f"powercontext: nothing changed: {exc}", file=sys.stderr)
        return 2
    for line in lines:
        print(line, file=out)
    return 0 if args.remove or ok else 1


def _install(
    settings: HookSettings, scope_id: str | None, with_mcp: bool, environ: Mapping[str, str]
) -> tuple[list[str], bool]:
    python = sys.executable
    mcp = mcp_server(python, settings.url, settings.token_env) if with_mcp else None
    result = setup(environ, Path.cwd(), python, settings, mcp)
    lines = list(result.lines)
    if not with_mcp:
        lines.append(
            "MCP server not registered: the MCP SDK is not installed here (pip install './client[mcp]')"
        )
    if scope_id is not None:
        lines.append(f"bound {Path.cwd()} to the Scope in {scope.bind(Path.cwd(), scope_id, environ)}")
    lines.append(f"tokens are read from ${settings.token_env} when a hook runs; none is written to a file")
    lines.append(f"undo: {UNDO_COMMAND}")
    return lines, result.trust.ok


def _changed(path: Path, changed: Sequence[Path]) -> str:
    return "updated" if path in changed else "unchanged"


def installed_commands(home: Path) -> dict[str, str]:
    """The PowerContext hook commands hooks.json holds now, by event (prompt/stop)."""
    return codex_files.own_commands(_read_json(home / HOOKS_FILE))


def doctor_checks(env: Mapping[str, str], cwd: Path) -> tuple[list[Check], str | None]:
    """Is the prompt hook installed, and will Codex run each PowerContext hook (is it trusted)?
    Also the installed prompt hook's command, whose flags the other checks use."""
    home, path = codex_home(env), codex_home(env) / HOOKS_FILE
    try:
        commands = installed_commands(home)
    except codex_files.SettingsConflict as exc:
        return [Check(False, f"hooks: {exc}")], None
    prompt = commands.get("prompt")
    if prompt is None:
        return [
            Check(
                False,
                f"hooks: no PowerContext UserPromptSubmit hook in {path}; run `powercontext setup codex`",
            )
        ], None
    python = shlex.split(prompt)[0]
    events = ", ".join(codex_files.HOOK_EVENTS[event] for event in commands)
    installed = f"hooks: installed in {path} ({events}; capture {'on' if 'stop' in commands else 'off'})"
    checks = [
        Check(
            Path(python).exists(),
            installed + ("" if Path(python).exists() else f"; but {python} is gone: run setup again"),
        )
    ]
    try:
        states, problems = codex_trust.read_states(
            codex_trust.Installed(codex_command(env), env, cwd, path, tuple(commands.values()))
        )
    except codex_trust.AppServerError as exc:
        return [*checks, Check(False, f"trust: cannot ask Codex ({exc}); {codex_trust.MANUAL_STEP}")], prompt
    trust = [Check(state.runs, f"trust: {codex_trust.describe(state)}") for state in states]
    return [*checks, *trust, *(Check(False, f"hooks: Codex says: {problem}") for problem in problems)], prompt


def doctor_hooks(
    args: argparse.Namespace, environ: Mapping[str, str], report: Callable[[bool, str], None]
) -> HookSettings | None:
    """`powercontext doctor codex`'s own lines (hooks installed, trusted); the installed hook's
    settings for the checks every host shares, or None when there is no hook to check."""
    checks, prompt = doctor_checks(environ, Path(args.cwd).resolve())
    for check in checks:
        report(check.ok, check.line)
    return None if prompt is None else parse(shlex.split(prompt)[5:])


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
    """The file's text with its line ends as they are (CR LF stays CR LF), or "" when missing."""
    try:
        with path.open(encoding="utf-8", newline="") as file:
            return file.read()
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
            write_atomically(path, text)
        changed.append(path)
    return changed
