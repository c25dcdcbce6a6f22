"""`powercontext setup|doctor HOST` and `powercontext bind SCOPE`: install the hooks into a host's
settings, check them end to end, and bind a workspace to a Scope.

Standard library only, like the hooks it installs; the `powercontext` command hands these three
commands here.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shlex
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from . import claude_code, codex_setup, scope
from ._contract import HEALTH_READY_PATH
from .files import write_atomically
from .prepared import PrepareFailure, fetch_prepared, request_body
from .settings import HookSettings, SettingsError, add_arguments, from_arguments, parse
from .transport import Unreachable, exchange, get_request

HOSTS = ("claude-code", "codex")
DOCTOR_QUERY = "powercontext doctor: is context prepared for this workspace?"
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class SetupError(Exception):
    """Setup cannot go on; nothing was changed. The message says what to fix."""


def main(argv: Sequence[str], environ: Mapping[str, str] | None = None, out: TextIO | None = None) -> int:
    environ = os.environ if environ is None else environ
    out = out or sys.stdout
    parser = _parser(environ)
    try:
        args = parser.parse_args(list(argv))
    except SystemExit as exc:
        return int(exc.code or 0)
    try:
        result: int = args.run(args, environ, out)
    except (SetupError, SettingsError, scope.ScopeError) as exc:
        print(f"powercontext: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return result


def _parser(environ: Mapping[str, str]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="powercontext")
    commands = parser.add_subparsers(dest="command", required=True)
    setup = commands.add_parser("setup", help="install PowerContext's hooks into an agent host's settings")
    setup.add_argument("host", choices=HOSTS)
    add_arguments(setup)
    setup.set_defaults(url=environ.get("POWERCONTEXT_URL") or setup.get_default("url"))
    setup.add_argument("--scope", metavar="SCOPE_ID", help="bind the current directory to this Scope too")
    setup.add_argument("--remove", action="store_true", help="take PowerContext's hooks out again")
    setup.set_defaults(run=_setup)
    doctor = commands.add_parser(
        "doctor", help="check an agent host's hooks, server, token, Scope and prepare"
    )
    doctor.add_argument("host", choices=HOSTS)
    doctor.add_argument("--cwd", default=".", help="the workspace to check (default: here)")
    doctor.set_defaults(run=_doctor)
    bind = commands.add_parser("bind", help="bind this directory (and below) to a Scope for the hooks")
    bind.add_argument("scope_id", nargs="?", help="the Scope id; leave out with --remove")
    bind.add_argument("--remove", action="store_true", help="remove this directory's binding")
    bind.set_defaults(run=_bind)
    return parser


# setup --------------------------------------------------------------------------------------------
def hook_command(python: str, host: str, event: str, settings: HookSettings) -> str:
    return shlex.join([python, "-m", "powercontext_host", host, event, *settings.flags()])


def _setup(args: argparse.Namespace, environ: Mapping[str, str], out: TextIO) -> int:
    if args.host == "codex":
        return codex_setup.run_setup(args, environ, out)
    path = claude_code.settings_path(environ)
    current = _read_json_object(path)
    if args.remove:
        changed = _write_if_changed(path, current, claude_code.with_hooks(current, {}, 0))
        print(
            f"{'removed PowerContext hooks from' if changed else 'no PowerContext hooks in'} {path}", file=out
        )
        print(claude_code.unregister_mcp(environ), file=out)
        return EXIT_OK
    settings = from_arguments(args)
    if settings.max_bytes > claude_code.MAX_CONTEXT_BYTES:
        raise SetupError(
            f"--max-bytes is at most {claude_code.MAX_CONTEXT_BYTES} for Claude Code, which replaces longer "
            "additional context with a short preview"
        )
    python = sys.executable
    commands = {claude_code.EVENTS["prompt"]: hook_command(python, args.host, "prompt", settings)}
    if settings.capture:
        commands[claude_code.EVENTS["stop"]] = hook_command(python, args.host, "stop", settings)
    timeout = int(settings.timeout) + 5  # the host's backstop; the hook keeps its own deadline
    changed = _write_if_changed(path, current, claude_code.with_hooks(current, commands, timeout))
    events = ", ".join(commands)
    print(f"{'updated' if changed else 'unchanged'}: {path} ({events} hooks)", file=out)
    if mcp_available():
        print(claude_code.register_mcp(_mcp_server(python, settings), environ), file=out)
    else:
        print(
            "MCP server not registered: the MCP SDK is not installed here (pip install './client[mcp]')",
            file=out,
        )
    if args.scope is not None:
        bindings = scope.bind(Path.cwd(), args.scope, environ)
        print(f"bound {Path.cwd()} to the Scope in {bindings}", file=out)
    print(f"tokens are read from ${settings.token_env} when a hook runs; none is written to a file", file=out)
    print(f"undo: powercontext setup {args.host} --remove", file=out)
    return EXIT_OK


def _mcp_server(python: str, settings: HookSettings) -> dict[str, Any]:
    args = ["-m", "powercontext_client", "--url", settings.url, "mcp"]
    server: dict[str, Any] = {"type": "stdio", "command": python, "args": args}
    if settings.token_env != "POWERCONTEXT_TOKEN":
        server["env"] = {"POWERCONTEXT_TOKEN": "${" + settings.token_env + "}"}
    return server


def mcp_available() -> bool:
    return importlib.util.find_spec("mcp") is not None


def _read_json_object(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    try:
        value = json.loads(text) if text.strip() else {}
    except ValueError:
        raise SetupError(f"{path} is not valid JSON; fix or move it, then run setup again") from None
    if not isinstance(value, dict):
        raise SetupError(f"{path} does not hold a JSON object; fix or move it, then run setup again")
    return value


def _write_if_changed(path: Path, old: dict[str, Any], new: dict[str, Any]) -> bool:
    if new == old and path.exists():
        return False
    write_atomically(path, json.dumps(new, indent=2, ensure_ascii=False) + "\n")
    return True


# doctor -------------------------------------------------------------------------------------------
def _doctor(args: argparse.Namespace, environ: Mapping[str, str], out: TextIO) -> int:
    failed = False

    def report(ok: bool, what: str) -> None:
        nonlocal failed
        failed |= not ok
        print(f"{'ok  ' if ok else 'FAIL'}  {what}", file=out)

    hooks = codex_setup.doctor_hooks if args.host == "codex" else _claude_code_hooks
    found = hooks(args, environ, report)
    if found is None:
        return EXIT_FAILED
    settings = found
    checks: list[Callable[[], tuple[bool, str]]] = [
        lambda: _reachable(settings),
        lambda: _token(settings, environ),
    ]
    for check in checks:
        ok, what = check()
        report(ok, what)
    choice = scope.choose(str(Path(args.cwd).resolve()), environ)
    report(
        choice.scope_id is not None,
        f"scope: {choice.scope_id!r} from the {choice.source}"
        if choice.scope_id
        else f"scope: none for {Path(args.cwd).resolve()}; {scope.HOW_TO_BIND}",
    )
    if choice.scope_id is not None and not failed:
        report(*_prepare(settings, choice.scope_id, environ))
    return EXIT_FAILED if failed else EXIT_OK


def _claude_code_hooks(
    args: argparse.Namespace, environ: Mapping[str, str], report: Callable[[bool, str], None]
) -> HookSettings | None:
    path = claude_code.settings_path(environ)
    try:
        installed = claude_code.installed_commands(_read_json_object(path))
    except SetupError as exc:
        report(False, str(exc))
        return None
    prompt = installed.get(claude_code.EVENTS["prompt"])
    if prompt is None:
        report(
            False,
            f"hooks: no PowerContext UserPromptSubmit hook in {path}; run `powercontext setup {args.host}`",
        )
        return None
    words = shlex.split(prompt)
    settings = parse(words[5:])
    interpreter_ok = Path(words[0]).exists()
    stop = claude_code.EVENTS["stop"] in installed
    report(
        interpreter_ok,
        f"hooks: installed in {path} (UserPromptSubmit{', Stop' if stop else ''}; capture "
        f"{'on' if stop and settings.capture else 'off'})"
        + ("" if interpreter_ok else f"; but {words[0]} is gone: run setup again"),
    )
    return settings


def _reachable(settings: HookSettings) -> tuple[bool, str]:
    try:
        status, _ = exchange(get_request(settings.url, HEALTH_READY_PATH, None), settings.timeout, 4096)
    except Unreachable as exc:
        return False, f"server: {settings.url} {exc}"
    return status == 200, f"server: {settings.url} answered {HEALTH_READY_PATH} with HTTP {status}"


def _token(settings: HookSettings, environ: Mapping[str, str]) -> tuple[bool, str]:
    present = bool(environ.get(settings.token_env))
    return True, (
        f"token: read from ${settings.token_env}"
        if present
        else f"token: ${settings.token_env} is not set (fine only for a server without access control)"
    )


def _prepare(settings: HookSettings, scope_id: str, environ: Mapping[str, str]) -> tuple[bool, str]:
    body = request_body(scope_id, DOCTOR_QUERY, settings.max_bytes, settings.assembly_json)
    try:
        content = fetch_prepared(
            settings.url, environ.get(settings.token_env) or None, body, settings.timeout
        )
    except PrepareFailure as exc:
        hint = {"http-401": "; the token was not accepted", "http-403": "; the token may not read this Scope"}
        return False, f"prepare: {exc.outcome} ({exc}){hint.get(exc.outcome, '')}"
    size = len(content.encode("utf-8"))
    return (
        True,
        f"prepare: a valid answer ({size} bytes of context)" if size else "prepare: a valid, empty answer",
    )


# bind ---------------------------------------------------------------------------------------------
def _bind(args: argparse.Namespace, environ: Mapping[str, str], out: TextIO) -> int:
    if args.remove == (args.scope_id is not None):
        raise SetupError("give a SCOPE_ID, or --remove without one")
    path = scope.bind(Path.cwd(), None if args.remove else args.scope_id, environ)
    what = "removed the binding of" if args.remove else "bound"
    print(f"{what} {Path.cwd()}{'' if args.remove else ' to that Scope'} ({path})", file=out)
    return EXIT_OK
