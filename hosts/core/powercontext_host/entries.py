"""A completed turn as the text of Memory entries of kind `conversation`, for every host.

One turn is one entry, so recall brings back the question with its answer (the header names the
host that captured it):

    [Hermes conversation | session 20260522_101500_ab12cd | 2026-05-22T10:15:03Z]
    User: my locker code is 4471 and the tide-pool survey is on Thursday

    Assistant: Noted.

A turn longer than one entry allows is split into parts, each with the header plus
`| part 2/3`, so every part still says where it came from. Secrets are redacted and recalled
`<memory-context>` blocks removed before anything is formatted.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from datetime import UTC, datetime

from ._contract import MAX_ENTRY_CHARS
from .redact import redact
from .split import split_text

KIND = "conversation"
MAX_SESSION_CHARS = 128
# Room kept for " | part NNNN/NNNN" and the header's line break.
_PART_RESERVE = 24

# Recalled context that a host fences into a user message (Hermes's `<memory-context>`) must not be
# stored again as new Memory.
_MEMORY_CONTEXT = re.compile(r"<\s*memory-context\s*>[\s\S]*?</\s*memory-context\s*>", re.IGNORECASE)


def clean(text: str) -> str:
    """Text safe to store: no recalled context, no secret shapes, no control characters."""
    text = _MEMORY_CONTEXT.sub("", text)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    # Lone surrogates cannot be encoded as UTF-8; other control characters have no place in Memory.
    text = text.encode("utf-8", "replace").decode("utf-8")
    text = "".join(ch for ch in text if ch in "\n\t" or unicodedata.category(ch) != "Cc")
    return redact(text).strip()


def turn_body(user: str, assistant: str) -> str:
    """`User: ...` and `Assistant: ...` paragraphs for the non-blank sides of a cleaned turn."""
    parts = [f"{label}: {text}" for label, text in (("User", user), ("Assistant", assistant)) if text]
    return "\n\n".join(parts)


def fingerprint(base_url: str, scope_id: str, body: str) -> str:
    """Identity of a turn's content in one Scope, whitespace-insensitive (session and time excluded)."""
    digest = hashlib.sha256()
    for part in (base_url, scope_id, " ".join(body.split())):
        digest.update(part.encode("utf-8", "replace") + b"\0")
    return digest.hexdigest()


def entry_texts(
    body: str, session_id: str, when: datetime, host: str, limit: int = MAX_ENTRY_CHARS
) -> list[str]:
    """The entries for one turn body: each at most `limit` characters, header first."""
    header = _header(host, session_id, when)
    pieces = split_text(body, limit - len(header) - _PART_RESERVE)
    if len(pieces) == 1:
        return [f"[{header}]\n{pieces[0]}"]
    total = len(pieces)
    return [f"[{header} | part {index}/{total}]\n{piece}" for index, piece in enumerate(pieces, 1)]


def recorded_time(value: object) -> datetime | None:
    """A host's RFC 3339 record time (`2026-05-22T10:15:03.120Z`) as an aware datetime, else None."""
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None


def _header(host: str, session_id: str, when: datetime) -> str:
    session = " ".join(session_id.split())[:MAX_SESSION_CHARS] or "unknown"
    moment = when.astimezone(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")
    return f"{host} conversation | session {session} | {moment}"
