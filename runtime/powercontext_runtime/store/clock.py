"""The timestamps the store writes (`created_at`, `applied_at`, ...): UTC, ISO 8601, to the microsecond.

Expiry compares these strings: every stored instant has this one fixed-width form, so ordering them
as text orders them in time, alike on SQLite and OceanBase. Tests set the time by replacing `now`.
"""

from __future__ import annotations

from datetime import UTC, datetime


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def instant(value: str) -> str | None:
    """An RFC 3339 / ISO 8601 time with an offset in the form `now` writes (converted to UTC), or
    None when it is not a real instant with an offset (a 30 February, a missing offset)."""
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        return None
    return parsed.astimezone(UTC).isoformat(timespec="microseconds")
