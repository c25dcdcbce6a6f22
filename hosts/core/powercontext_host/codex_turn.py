"""The completed turn a Codex `Stop` hook is called for: the user's prompt and the final reply.

Codex hands the Stop hook `last_assistant_message` (the final reply) but not the prompt. The prompt
is in the session's rollout file (`transcript_path`, JSON Lines, already written when Stop runs) as
the `item_completed` event whose item is the `UserMessage` of this `turn_id`. Only lines naming the
turn are parsed, so a long session costs one pass over the file and little JSON work.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .hook import Turn

MAX_LINE_BYTES = 4 << 20  # a rollout line longer than this is not a user message worth reading


def completed_turn(hook_input: Mapping[str, Any]) -> Turn | None:
    """The turn the Stop hook input describes, or None when either side is missing or blank."""
    reply = hook_input.get("last_assistant_message")
    transcript = hook_input.get("transcript_path")
    turn_id = hook_input.get("turn_id")
    if not (
        isinstance(reply, str) and reply.strip() and isinstance(transcript, str) and isinstance(turn_id, str)
    ):
        return None
    from .entries import recorded_time  # the stop hook's detached process only

    prompt, sent = user_prompt(Path(transcript), turn_id)
    if prompt is None or not prompt.strip():
        return None
    return Turn(prompt, reply, recorded_time(sent))


def user_prompt(transcript: Path, turn_id: str) -> tuple[str | None, object]:
    """The text of the user message of `turn_id` in a Codex rollout file (the last one, if several),
    and its record's `timestamp`."""
    needle = json.dumps(turn_id).encode("utf-8")
    found: tuple[str | None, object] = (None, None)
    try:
        with transcript.open("rb") as lines:
            for line in lines:
                if needle not in line or b'"UserMessage"' not in line or len(line) > MAX_LINE_BYTES:
                    continue
                message = _user_message(line, turn_id)
                if message[0] is not None:
                    found = message
    except OSError:
        return None, None
    return found


def _user_message(line: bytes, turn_id: str) -> tuple[str | None, object]:
    try:
        record = json.loads(line)
    except ValueError:
        return None, None
    if not isinstance(record, dict):
        return None, None
    payload = record.get("payload")
    if (
        not isinstance(payload, dict)
        or payload.get("type") != "item_completed"
        or payload.get("turn_id") != turn_id
    ):
        return None, None
    item = payload.get("item")
    if not isinstance(item, dict) or item.get("type") != "UserMessage":
        return None, None
    parts = [
        part["text"]
        for part in item.get("content", [])
        if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str)
    ]
    return ("\n".join(parts), record.get("timestamp")) if parts else (None, None)
