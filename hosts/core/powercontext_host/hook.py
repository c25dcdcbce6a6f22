"""A hook command: `python -m powercontext_host <host> <event> [settings flags]`.

`prompt` (the host's prompt-submit event) sends one prepare for the prompt and prints the host's
"add this context" answer with the server's `content` unchanged. `stop` (the host's end-of-turn
event) reads the event and exits, leaving a detached process to read the turn and store it as
`conversation` Memory. Both fail open: whatever goes wrong, the hook exits 0 with nothing on
stdout, so the prompt goes on without context, and one diagnostic line names the outcome in the
host's log (`state.py`), and on stderr while the host still listens (`prompt`); it never holds the
prompt, the Scope's text, the token or a response body.
"""

from __future__ import annotations

import io
import json
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, TextIO

if TYPE_CHECKING:
    from datetime import datetime

    from .settings import HookSettings
    from .state import HostState

# The stop hook's own process imports nothing more than this module before it detaches, so the
# host waits for little more than the interpreter: the other modules load where they are used.
HOSTS = ("claude-code", "codex")
EVENTS = ("prompt", "stop")

MAX_EVENT_BYTES = 8 << 20  # a hook's stdin: the host's event JSON (the prompt is at most this)
CAPTURE_ENV = "POWERCONTEXT_CAPTURE"  # "off" turns capture off without touching the settings


class Turn(NamedTuple):
    """A completed turn, and when its prompt was sent as the host recorded it (None: not recorded).
    The captured entry's header carries that time, so capturing the turn again gives the same text
    and the server's duplicate check stores it once."""

    user: str
    assistant: str
    at: datetime | None = None


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
    if len(argv) < 2 or argv[0] not in HOSTS or argv[1] not in EVENTS:
        print(
            f"usage: python -m powercontext_host {{{','.join(HOSTS)}}} {{{','.join(EVENTS)}}} [flags]",
            file=stderr,
        )
        return 0
    host, event = argv[0], argv[1]
    if event == "stop":
        # The host waits for this process: it reads the event and hands everything else to a
        # detached child at once, so capture costs the host a process start and a read.
        if environ.get(CAPTURE_ENV, "").strip().lower() == "off":
            return 0
        stdin = io.StringIO(stdin.read(MAX_EVENT_BYTES + 1))
        if not _detached():
            return 0
        try:
            _run(host, event, argv[2:], stdin, stdout, stderr, environ)
        finally:
            os._exit(0)
    _run(host, event, argv[2:], stdin, stdout, stderr, environ)
    return 0


def _detached() -> bool:
    """Fork: False in the parent, which returns; True in the child, which keeps none of the host's
    pipes open (the host waits for those to close) and runs in a session of its own."""
    sys.stdout.flush()
    sys.stderr.flush()
    if os.fork() != 0:
        return False
    os.setsid()
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    return True


def _run(
    host: str,
    event: str,
    flags: Sequence[str],
    stdin: TextIO,
    stdout: TextIO,
    stderr: TextIO,
    environ: Mapping[str, str],
) -> None:
    from .settings import SettingsError, parse
    from .state import HostState

    adapter = adapters()[host]
    state = HostState(host, environ)

    def say(line: str) -> None:
        print(f"powercontext: {line}", file=stderr)
        state.log(f"{event}: {line}")

    try:
        settings = parse(flags)
        payload = _event(stdin)
    except (SettingsError, ValueError) as exc:
        say(f"skipped: {exc}")
        return
    if event == "prompt":
        _prompt(adapter, settings, payload, stdout, say, environ)
    else:
        _stop(adapter, settings, payload, say, state, environ)


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
    from . import scope
    from .prepared import PrepareFailure, fetch_prepared, request_body  # the stop hook needs none

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

    from . import scope
    from .entries import clean, entry_texts, fingerprint, turn_body

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
    body = turn_body(clean(turn.user), clean(turn.assistant)) if turn is not None else ""
    if turn is None or not body:
        say("capture skipped: empty-turn")
        state.count(skipped=1)
        return
    mark = fingerprint(settings.url, choice.scope_id, body)
    if not state.remember_turn(mark):
        say("capture skipped: repeated-turn")
        state.count(skipped=1)
        return
    session = str(payload.get("session_id") or "")
    texts = entry_texts(body, session, turn.at or datetime.now(UTC), adapter.label)
    say(f"capture queued: {len(texts)} entries")
    token = environ.get(settings.token_env) or None
    _send((settings.url, token, choice.scope_id), texts, mark, state)


def _send(where: tuple[str, str | None, str], texts: list[str], mark: str, state: HostState) -> None:
    """Store the turn's entries, trying once within DEFAULT_CAPTURE_TIMEOUT, and count what happened
    (this runs in the detached child: the host is not waiting)."""
    from .entries import KIND
    from .remember import Destination, MemoryWriter, WriteFailure
    from .settings import DEFAULT_CAPTURE_TIMEOUT

    try:
        written = MemoryWriter(timeout=DEFAULT_CAPTURE_TIMEOUT).remember(Destination(*where), texts, KIND)
    except WriteFailure as exc:
        state.forget_turn(mark)
        state.count(failed=len(texts))
        state.log(f"stop: capture failed: {exc}")
    else:
        state.count(stored=written.stored, duplicates=written.duplicates)
        state.log(f"stop: capture stored: {written.stored} entries, {written.duplicates} already held")
