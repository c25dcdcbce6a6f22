"""The timestamps the store writes (`created_at`, `applied_at`, ...): UTC, ISO 8601, to the microsecond."""

from __future__ import annotations

from datetime import UTC, datetime


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")
