"""The same turn captured twice by a hook is stored once (issue 33).

Two stop hooks that keep no common record of the turns they captured (two state directories, as
with two installations or a state directory wiped between them) send the same completed turn. The
entry's header carries the time the host recorded for the prompt, not the time of capture, so both
send the same text, the server's duplicate check stores it once, and the second hook's counters say
the entry was already held.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

SENT_AT = "2026-05-22T10:15:03.120Z"
HEADER_TIME = "2026-05-22T10:15:03Z"
PROMPT = "Where is the tide-pool survey kept?"
REPLY = "In the blue binder on the second shelf."


def _claude_code_event(tmp_path: Path) -> dict[str, Any]:
    transcript = tmp_path / "session.jsonl"
    lines = [
        {"type": "user", "timestamp": SENT_AT, "message": {"role": "user", "content": PROMPT}},
        {
            "type": "assistant",
            "timestamp": "2026-05-22T10:15:09.004Z",
            "message": {"role": "assistant", "content": [{"type": "text", "text": REPLY}]},
        },
    ]
    transcript.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return {"session_id": "s-1", "transcript_path": str(transcript), "last_assistant_message": REPLY}


def _codex_event(tmp_path: Path) -> dict[str, Any]:
    rollout = tmp_path / "rollout.jsonl"
    turn_id = "turn-7"
    item = {"type": "UserMessage", "id": "m-1", "content": [{"type": "text", "text": PROMPT}]}
    record = {
        "timestamp": SENT_AT,
        "type": "event_msg",
        "payload": {"type": "item_completed", "turn_id": turn_id, "item": item},
    }
    rollout.write_text(json.dumps(record) + "\n")
    return {
        "session_id": "s-1",
        "transcript_path": str(rollout),
        "turn_id": turn_id,
        "last_assistant_message": REPLY,
    }


EVENTS = {"claude-code": _claude_code_event, "codex": _codex_event}


def _stop_hook(host: str, url: str, event: dict[str, Any], home: Path, state: Path, scope: str) -> None:
    environ = {
        **os.environ,
        "HOME": str(home),
        "XDG_STATE_HOME": str(state),
        "POWERCONTEXT_SCOPE": scope,
    }
    done = subprocess.run(
        [sys.executable, "-m", "powercontext_host", host, "stop", "--url", url],
        input=json.dumps({**event, "cwd": str(home)}),
        capture_output=True,
        text=True,
        env=environ,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def _counters(state: Path, host: str) -> dict[str, int]:
    """The hook's capture counters once its detached process has written them (20 s at most)."""
    path = state / "powercontext" / f"{host}-capture.json"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if path.exists():
            counters = json.loads(path.read_text())
            if counters.get("stored", 0) + counters.get("duplicates", 0) + counters.get("failed", 0):
                return dict(counters)
        time.sleep(0.1)
    raise AssertionError(f"no capture outcome in {path} after 20 s")


@pytest.mark.parametrize("host", sorted(EVENTS))
def test_a_turn_captured_again_by_another_hook_is_stored_once_and_counted(
    host: str, live_server: str, http: httpx.Client, fresh_scope: str, tmp_path: Path
) -> None:
    scope_id = fresh_scope
    event = EVENTS[host](tmp_path)
    first, second = tmp_path / "state-a", tmp_path / "state-b"
    _stop_hook(host, live_server, event, tmp_path, first, scope_id)
    assert _counters(first, host)["stored"] == 1
    _stop_hook(host, live_server, event, tmp_path, second, scope_id)
    again = _counters(second, host)
    assert (again["stored"], again["duplicates"]) == (0, 1)
    listed = http.post("/v1/memory/entries/list", json={"scope_id": scope_id, "limit": 10}).json()["entries"]
    assert len(listed) == 1
    header = listed[0]["text"].split("\n", 1)[0]
    assert header.endswith(f"| session s-1 | {HEADER_TIME}]"), header
    assert PROMPT in listed[0]["text"] and REPLY in listed[0]["text"]
