"""A hook command: `python -m powercontext_host <host> <event> [settings flags]`.

`prompt` (the host's prompt-submit event) sends one prepare for the prompt and prints the host's
"add this context" answer with the server's `content` unchanged. `stop` (the host's end-of-turn
event) stores the completed turn as `conversation` Memory. Both fail open: whatever goes wrong, the
hook exits 0 with nothing on stdout, so the prompt goes on without context, and one diagnostic line
names the outcome on stderr and in the host's log (`state.py`); it never holds the prompt, the
Scope's text, the token or a response body.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, TextIO

from . import scope
from .prepared import PrepareFailure, fetch_prepared, request_body
from .settings import DEFAULT_CAPTURE_TIMEOUT, EVENTS, HookSettings, SettingsError, parse
from .state import HostState

if TYPE_CHECKING:
    from .remember import Destination

MAX_EVENT_BYTES = 8 << 20  # a hook's stdin: the host's event JSON (the prompt is at most this)
CAPTURE_ENV = "POWERCONTEXT_CAPTURE"  # "off" turns capture off without touching the settings


class Turn(NamedTuple):
    user: str
    assistant: str


class HostAdapter(NamedTuple):
    """What differs between hosts: the name in captured entries, how the prompt-submit answer looks,
    and where a completed turn is read from."""

    label: str  # "Claude Code": the captured entries' header says who captured them
    context_output: Callable[[str], dict[str, Any]]
    completed_turn: Callable[[Mapping[str, Any]], Turn | None]


def adapters() -> dict[str, HostAdapter]:
    from . import claude_code, codex

    return {"claude-code": claude_code.ADAPTER, "codex": codex.ADAPTER}


def main(
    argv: Sequence[str],
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    environ: Mapping[str, str] | None = None,
) -> int:
    """Always 0: a hook never stops the host."""
    stdin, stdout, stderr = stdin or sys.stdin, stdout or sys.stdout, stderr or sys.stderr
    environ = os.environ if environ is None else environ
    known = adapters()
    if len(argv) < 2 or argv[0] not in known or argv[1] not in EVENTS:
        print(
            f"usage: python -m powercontext_host {{{','.join(known)}}} {{{','.join(EVENTS)}}} [flags]",
            file=stderr,
        )
        return 0
    host, event = argv[0], argv[1]
    state = HostState(host, environ)

    def say(line: str) -> None:
        print(f"powercontext: {line}", file=stderr)
        state.log(f"{event}: {line}")

    try:
        settings = parse(argv[2:])
        payload = _event(stdin)
    except (SettingsError, ValueError) as exc:
        say(f"skipped: {exc}")
        return 0
    if event == "prompt":
        _prompt(known[host], settings, payload, stdout, say, environ)
    else:
        _stop(known[host], host, settings, payload, say, state, environ)
    return 0


def _event(stdin: TextIO) -> Mapping[str, Any]:
    text = stdin.read(MAX_EVENT_BYTES + 1)
    if len(text) > MAX_EVENT_BYTES:
        raise ValueError("the hook's input is too large")
    try:
        payload = json.loads(text)
    except ValueError:
        raise ValueError("the hook's input is not JSON") from None
    if not isinstance(payload, dict):
        raise ValueError("the hook's input is not a JSON object")
    return payload


def _prompt(
    adapter: HostAdapter,
    settings: HookSettings,
    payload: Mapping[str, Any],
    stdout: TextIO,
    say: Callable[[str], None],
    environ: Mapping[str, str],
) -> None:
    started = time.monotonic()
    prompt = payload.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        say("context skipped: empty-prompt")
        return
    choice = scope.choose(str(payload.get("cwd") or ""), environ)
    if choice.scope_id is None:
        say(f"context skipped: no-scope ({scope.HOW_TO_BIND})")
        return
    body = request_body(choice.scope_id, prompt, settings.max_bytes, settings.assembly_json)
    try:
        content = fetch_prepared(
            settings.url, environ.get(settings.token_env) or None, body, settings.timeout
        )
    except PrepareFailure as exc:
        say(f"context skipped: {exc.outcome} ({exc})")
        return
    elapsed = (time.monotonic() - started) * 1000
    if not content:
        say(f"context empty: nothing recalled ({elapsed:.0f} ms)")
        return
    stdout.write(json.dumps(adapter.context_output(content)))
    stdout.flush()
    say(f"context added: {len(content.encode('utf-8'))} bytes ({elapsed:.0f} ms)")


def _stop(
    adapter: HostAdapter,
    host: str,
    settings: HookSettings,
    payload: Mapping[str, Any],
    say: Callable[[str], None],
    state: HostState,
    environ: Mapping[str, str],
) -> None:
    if not settings.capture or environ.get(CAPTURE_ENV, "").strip().lower() == "off":
        return
    # Capture's modules load here only: the prompt hook, on every prompt, never needs them.
    from datetime import UTC, datetime

    from .entries import clean, entry_texts, fingerprint, turn_body
    from .remember import Destination

    choice = scope.choose(str(payload.get("cwd") or ""), environ)
    if choice.scope_id is None:
        say(f"capture skipped: no-scope ({scope.HOW_TO_BIND})")
        return
    try:
        turn = adapter.completed_turn(payload)
    except (OSError, ValueError) as exc:
        say(f"capture skipped: unreadable-transcript ({type(exc).__name__})")
        state.count(skipped=1)
        return
    body = turn_body(clean(turn.user), clean(turn.assistant)) if turn else ""
    if not body:
        say("capture skipped: empty-turn")
        state.count(skipped=1)
        return
    mark = fingerprint(settings.url, choice.scope_id, body)
    if not state.remember_turn(mark):
        say("capture skipped: repeated-turn")
        state.count(skipped=1)
        return
    session = str(payload.get("session_id") or "")
    texts = entry_texts(body, session, datetime.now(UTC), adapter.label)
    destination = Destination(settings.url, environ.get(settings.token_env) or None, choice.scope_id)
    state.count(captured=1)
    say(f"capture queued: {len(texts)} entries")
    _send_in_background(destination, texts, mark, state)


def _send_in_background(destination: Destination, texts: list[str], mark: str, state: HostState) -> None:
    """Hand the write to a detached child so the host never waits for the server. The child keeps
    none of the host's pipes open (the host waits for those to close), tries once within
    DEFAULT_CAPTURE_TIMEOUT and counts what happened; the parent returns at once."""
    from .entries import KIND
    from .remember import MemoryWriter, WriteFailure

    sys.stdout.flush()
    sys.stderr.flush()
    if os.fork() != 0:
        return
    try:
        os.setsid()
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        try:
            stored = MemoryWriter(timeout=DEFAULT_CAPTURE_TIMEOUT).remember(destination, texts, KIND)
        except WriteFailure as exc:
            state.forget_turn(mark)
            state.count(failed=len(texts))
            state.log(f"stop: capture failed: {exc}")
        else:
            state.count(stored=stored)
            state.log(f"stop: capture stored: {stored} entries")
    finally:
        os._exit(0)
