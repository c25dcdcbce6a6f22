"""`validate_prepared_context`: the checks a host runs on a prepare answer before injecting it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from powercontext_api.models import PreparedContext

from ._errors import InvalidPreparedContextError

PREPARED_CONTEXT_SCHEMA: Final = "powercontext.prepared-context.v1"
_KEYS: Final = frozenset({"schema", "status", "content", "content_bytes"})


@dataclass(frozen=True)
class ValidatedContext:
    """A `ready` answer that passed every check: inject `content` as it is."""

    content: str
    content_bytes: int


def validate_prepared_context(
    payload: Mapping[str, Any] | PreparedContext, *, max_bytes: int
) -> ValidatedContext | None:
    """Check a prepare answer against the contract and the host's own byte cap.

    `payload` is the decoded JSON body (a dict) or the `PreparedContext` the client returned.
    Returns the content of a `ready` answer, `None` for an `empty` one, and raises
    `InvalidPreparedContextError` when any of these fails:

    - the keys are exactly `schema`, `status`, `content`, `content_bytes`;
    - `schema` is `powercontext.prepared-context.v1`;
    - `status` is `ready` with a non-blank string `content`, or `empty` with `content` null and
      `content_bytes` 0;
    - `content_bytes` is an integer equal to the UTF-8 length of `content`;
    - `content_bytes` is at most `max_bytes`, the host's cap (not necessarily what it asked for).
    """
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0:
        raise ValueError(f"max_bytes must be a non-negative int, not {max_bytes!r}")
    if isinstance(payload, PreparedContext):
        payload = payload.model_dump(mode="json", by_alias=True)
    if not isinstance(payload, Mapping):
        raise InvalidPreparedContextError(f"the answer is a {type(payload).__name__}, not a JSON object")
    keys = set(payload)
    if keys != _KEYS:
        raise InvalidPreparedContextError(
            f"the answer must have exactly the keys content, content_bytes, schema, status; "
            f"got {', '.join(sorted(map(str, keys))) or 'none'}"
        )
    if payload["schema"] != PREPARED_CONTEXT_SCHEMA:
        raise InvalidPreparedContextError(f"schema is {payload['schema']!r}, not {PREPARED_CONTEXT_SCHEMA!r}")
    status, content, content_bytes = payload["status"], payload["content"], payload["content_bytes"]
    if isinstance(content_bytes, bool) or not isinstance(content_bytes, int):
        raise InvalidPreparedContextError(f"content_bytes is {content_bytes!r}, not an integer")
    if status == "empty":
        if content is not None or content_bytes != 0:
            raise InvalidPreparedContextError("an empty answer must have content null and content_bytes 0")
        return None
    if status != "ready":
        raise InvalidPreparedContextError(f"status is {status!r}, not 'ready' or 'empty'")
    if not isinstance(content, str) or not content.strip():
        raise InvalidPreparedContextError("a ready answer must have a non-blank string content")
    try:
        actual = len(content.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise InvalidPreparedContextError("content is not encodable as UTF-8") from exc
    if content_bytes != actual:
        raise InvalidPreparedContextError(
            f"content_bytes is {content_bytes} but content is {actual} bytes of UTF-8"
        )
    if content_bytes > max_bytes:
        raise InvalidPreparedContextError(
            f"content is {content_bytes} bytes, over the host's cap of {max_bytes}"
        )
    return ValidatedContext(content=content, content_bytes=content_bytes)
