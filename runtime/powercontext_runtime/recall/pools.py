"""Recalled candidates with their exact origins, and the pool rules every prepare mode shares."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Origin:
    """Exact identity of a recalled item. Memory adds the entry and its version (and the
    version's expiry, which the receipt shows)."""

    scope_id: str
    family: str
    artifact_id: str
    revision: int
    entry_id: str | None = None
    entry_version_id: str | None = None
    expires_at: str | None = None


@dataclass(frozen=True, slots=True)
class Candidate:
    origin: Origin
    body: str
    from_current_scope: bool


def interleave(per_scope: Sequence[Sequence[T]], cap: int | None = None) -> list[T]:
    """Round-robin across Scopes in the given order (current Scope first), keeping each one's
    order, up to `cap` items (None: all of them)."""
    merged: list[T] = []
    if cap is not None and cap <= 0:
        return merged
    depth = max((len(hits) for hits in per_scope), default=0)
    for i in range(depth):
        for hits in per_scope:
            if i < len(hits):
                merged.append(hits[i])
                if len(merged) == cap:
                    return merged
    return merged
