"""Opaque page cursors: a listing kind and a position, so a cursor from one listing fails in another."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from typing import TypeVar

from .errors import InvalidRequest

T = TypeVar("T")


def encode_cursor(kind: str, position: str) -> str:
    return base64.urlsafe_b64encode(f"{kind}:{position}".encode()).decode("ascii").rstrip("=")


def decode_cursor(cursor: str, kind: str) -> str:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("utf-8")
    except (binascii.Error, ValueError):
        raw = ""
    prefix = f"{kind}:"
    position = raw[len(prefix) :] if raw.startswith(prefix) else ""
    if not position or (kind == "entry" and not position.isdigit()):
        raise InvalidRequest.single(
            "cursor_invalid", ("cursor",), "The cursor is not valid for this listing."
        )
    return position


def page_of(rows: Sequence[tuple[int, T]], limit: int, kind: str) -> tuple[list[T], str | None]:
    """A page of `limit` items from `limit + 1` keyed rows, and the cursor of the next page if any."""
    page = rows[:limit]
    more = len(rows) > limit
    return [item for _, item in page], encode_cursor(kind, str(page[-1][0])) if more else None
