"""Trust the PowerContext hooks through Codex's own app-server, as its `/hooks` screen does.

Codex runs a non-managed hook only once the user has trusted it, and records that trust per hook
content (`hooks.state."<key>".trusted_hash` in its config.toml). The hash is Codex's business: this
module asks `codex app-server` (JSON-RPC over stdio, one JSON object a line) for `hooks/list`, hands
back the `currentHash` of each PowerContext hook in one `config/batchWrite`, then lists again to
check that Codex now calls them trusted. Whatever stops that, the result says what the user must do
instead: open `/hooks` in Codex and trust them.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CLIENT_NAME = "powercontext"
RPC_SECONDS = 30.0  # a cold app-server start takes a second or two; a hung one must not hang setup
MANUAL_STEP = (
    "start `codex` in this workspace, type /hooks and trust the PowerContext hooks "
    "(UserPromptSubmit and Stop); Codex skips an untrusted hook without a word"
)
# Codex's trust states (HookTrustStatus in its app-server protocol), plus one of ours.
TRUSTED = "trusted"
MANAGED = "managed"  # installed by an administrator: runs without user trust
MISSING = "missing"  # Codex does not list the hook at all


class AppServerError(Exception):
    """`codex app-server` could not be started or did not answer as expected."""


@dataclass(frozen=True)
class HookState:
    """One PowerContext hook as Codex lists it."""

    command: str
    event: str  # Codex's event name, e.g. userPromptSubmit
    key: str  # Codex's identity of the hook: "<hooks file>:<event>:<group>:<handler>"
    status: str  # trusted | untrusted | modified | managed | missing
    current_hash: str

    @property
    def runs(self) -> bool:
        return self.status in (TRUSTED, MANAGED)


@dataclass(frozen=True)
class TrustResult:
    """What `trust_hooks` achieved: `ok` when every hook will run; `message` is one line for the user."""

    ok: bool
    # trusted | already-trusted | codex-not-found | app-server-failed | not-listed | still-untrusted
    outcome: str
    hooks: tuple[HookState, ...]
    message: str


class AppServer:
    """A `codex app-server` child on stdio for the length of a `with` block."""

    def __init__(self, command: Sequence[str], env: Mapping[str, str], cwd: Path) -> None:
        self._command = [*command, "app-server"]
        self._env = dict(env)
        self._cwd = cwd
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._next_id = 0
        self._process: subprocess.Popen[str] | None = None

    def __enter__(self) -> AppServer:
        try:
            self._process = subprocess.Popen(
                self._command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=self._env,
                cwd=self._cwd,
                text=True,
                encoding="utf-8",
            )
        except OSError as exc:
            raise AppServerError(f"could not start {self._command[0]}: {exc.strerror}") from None
        threading.Thread(target=self._read, name="codex-app-server", daemon=True).start()
        try:
            self.call("initialize", {"clientInfo": {"name": CLIENT_NAME, "title": None, "version": "1"}})
            self._send({"method": "initialized"})
        except AppServerError:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        process = self._process
        if process is None:
            return
        if process.stdin:
            with contextlib.suppress(OSError):
                process.stdin.close()  # the app-server exits when its input closes
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def call(self, method: str, params: object, seconds: float = RPC_SECONDS) -> Any:
        """Send one request and return its `result`; notifications in between are passed over."""
        self._next_id += 1
        request_id = self._next_id
        self._send({"id": request_id, "method": method, "params": params})
        deadline = time.monotonic() + seconds
        while True:
            message = self._receive(deadline, method)
            if message.get("id") != request_id or "method" in message:
                if "method" in message and "id" in message:  # a request to us: we offer nothing
                    self._send({"id": message["id"], "error": {"code": -32601, "message": "unsupported"}})
                continue
            if "error" in message:
                error = message["error"] if isinstance(message["error"], dict) else {}
                raise AppServerError(f"{method} failed: {error.get('message', 'error')}")
            return message.get("result")

    def _send(self, message: dict[str, Any]) -> None:
        assert self._process is not None and self._process.stdin is not None
        try:
            self._process.stdin.write(json.dumps(message) + "\n")
            self._process.stdin.flush()
        except OSError:
            what = message.get("method", "a request")
            raise AppServerError(f"codex app-server exited before answering {what}") from None

    def _receive(self, deadline: float, method: str) -> dict[str, Any]:
        try:
            line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise AppServerError(f"codex app-server did not answer {method} in time") from None
        if line is None:
            raise AppServerError(f"codex app-server exited before answering {method}")
        try:
            message = json.loads(line)
        except ValueError:
            return {}
        return message if isinstance(message, dict) else {}

    def _read(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        for line in self._process.stdout:
            self._lines.put(line)
        self._lines.put(None)


@dataclass(frozen=True)
class Listing:
    """What `hooks/list` answered: every hook Codex sees, and what it could not load (a hooks file
    it failed to parse is skipped whole, with only a warning)."""

    hooks: tuple[dict[str, Any], ...]
    problems: tuple[str, ...]


def list_hooks(server: AppServer, cwd: Path) -> Listing:
    """Every hook Codex sees from `cwd` (user, project, managed…), as `hooks/list` describes it."""
    result = server.call("hooks/list", {"cwds": [str(cwd)]})
    entries = [e for e in result.get("data", []) if isinstance(e, dict)] if isinstance(result, dict) else []
    hooks = tuple(hook for entry in entries for hook in entry.get("hooks", []) if isinstance(hook, dict))
    problems = tuple(
        str(problem.get("message", problem) if isinstance(problem, dict) else problem)
        for entry in entries
        for problem in [*entry.get("warnings", []), *entry.get("errors", [])]
    )
    return Listing(hooks, problems)


def states_of(
    listed: Iterable[dict[str, Any]], hooks_file: Path, commands: Iterable[str]
) -> tuple[HookState, ...]:
    """The state of each of `commands` among the hooks Codex listed from `hooks_file`."""
    ours = [
        hook
        for hook in listed
        if hook.get("handlerType") == "command" and _same_file(hook.get("sourcePath"), hooks_file)
    ]
    states = []
    for command in commands:
        found = next((hook for hook in ours if hook.get("command") == command), None)
        if found is None:
            states.append(HookState(command, "", "", MISSING, ""))
            continue
        states.append(
            HookState(
                command,
                str(found.get("eventName", "")),
                str(found.get("key", "")),
                str(found.get("trustStatus", "")),
                str(found.get("currentHash", "")),
            )
        )
    return tuple(states)


def trust_edits(states: Iterable[HookState]) -> list[dict[str, Any]]:
    """The `config/batchWrite` edits that record Codex's own current hash of each hook not yet run."""
    return [
        {
            "keyPath": f"hooks.state.{_quoted(state.key)}.trusted_hash",
            "value": state.current_hash,
            "mergeStrategy": "replace",
        }
        for state in states
        if not state.runs and state.status != MISSING
    ]


@dataclass(frozen=True)
class Installed:
    """PowerContext's hooks as setup installed them: the `codex` command to ask (None: not found),
    its environment and workspace, the hooks file and the hooks' commands."""

    codex: Sequence[str] | None
    env: Mapping[str, str]
    cwd: Path
    hooks_file: Path
    commands: tuple[str, ...]


def trust_hooks(installed: Installed) -> TrustResult:
    """Leave the installed hooks trusted, through Codex itself."""
    codex, cwd, hooks_file, commands = (
        installed.codex,
        installed.cwd,
        installed.hooks_file,
        installed.commands,
    )
    if not codex:
        return TrustResult(
            False, "codex-not-found", (), f"the codex command was not found on PATH: {MANUAL_STEP}"
        )
    try:
        with AppServer(codex, installed.env, cwd) as server:
            listing = list_hooks(server, cwd)
            before = states_of(listing.hooks, hooks_file, commands)
            if any(state.status == MISSING for state in before):
                said = "".join(f" (Codex says: {problem})" for problem in listing.problems)
                return TrustResult(
                    False,
                    "not-listed",
                    before,
                    f"Codex does not list the hooks in {hooks_file}{said}: fix that, then {MANUAL_STEP}",
                )
            edits = trust_edits(before)
            if not edits:
                return TrustResult(
                    True, "already-trusted", before, "Codex already trusts the PowerContext hooks"
                )
            server.call("config/batchWrite", {"edits": edits, "reloadUserConfig": True})
            after = states_of(list_hooks(server, cwd).hooks, hooks_file, commands)
    except AppServerError as exc:
        return TrustResult(False, "app-server-failed", (), f"{exc}: {MANUAL_STEP}")
    if not all(state.runs for state in after):
        return TrustResult(
            False,
            "still-untrusted",
            after,
            f"Codex still does not trust every PowerContext hook: {MANUAL_STEP}",
        )
    return TrustResult(
        True, "trusted", after, f"Codex now trusts the {len(after)} PowerContext hooks (as /hooks would)"
    )


def read_states(installed: Installed) -> tuple[tuple[HookState, ...], tuple[str, ...]]:
    """How Codex sees each installed hook now, and what it could not load (for doctor); raises
    AppServerError."""
    if not installed.codex:
        raise AppServerError("the codex command was not found on PATH")
    with AppServer(installed.codex, installed.env, installed.cwd) as server:
        listing = list_hooks(server, installed.cwd)
    return states_of(listing.hooks, installed.hooks_file, installed.commands), listing.problems


def describe(state: HookState) -> str:
    """One line saying whether Codex will run this hook, and what to do when it will not."""
    name = (
        state.event[:1].upper() + state.event[1:]
    )  # Codex lists userPromptSubmit; hooks.json says UserPromptSubmit
    if state.runs:
        return f"{name}: {state.status}"
    if state.status == MISSING:
        return f"Codex does not list the hook `{state.command}`: run `powercontext setup codex` again"
    if state.status == "modified":
        return f"{name}: modified since it was trusted, so Codex skips it: {MANUAL_STEP}"
    return f"{name}: {state.status}, so Codex skips it: {MANUAL_STEP}"


def _quoted(key: str) -> str:
    """`key` as one quoted segment of a Codex config key path (its keys hold dots and slashes)."""
    return '"' + key.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _same_file(listed: object, path: Path) -> bool:
    if not isinstance(listed, str):
        return False
    return os.path.realpath(listed) == os.path.realpath(path)
