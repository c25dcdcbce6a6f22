"""Domain values the Runtime returns. Frozen: a result never changes after it is made."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

MEMORY_FAMILY = "memory"
MEMORY_ARTIFACT_ID = "memory"

EntryState = Literal["active", "retired"]


@dataclass(frozen=True, slots=True)
class Scope:
    scope_id: str
    title: str
    summary: str
    context_references: tuple[str, ...]
    version: int


@dataclass(frozen=True, slots=True)
class ScopePage:
    scopes: tuple[Scope, ...]
    next_cursor: str | None


@dataclass(frozen=True, slots=True)
class MemoryCitation:
    """Exact identity of an entry version within Memory revision `revision` (artifact memory/memory)."""

    revision: int
    entry_id: str
    entry_version_id: str


@dataclass(frozen=True, slots=True)
class MemoryEntry:
    citation: MemoryCitation
    text: str
    kind: str
    state: EntryState


@dataclass(frozen=True, slots=True)
class MemoryEntryPage:
    entries: tuple[MemoryEntry, ...]
    next_cursor: str | None


@dataclass(frozen=True, slots=True)
class MemoryHit:
    citation: MemoryCitation
    text: str


PreparedStatus = Literal["ready", "empty"]
PREPARED_SCHEMA = "powercontext.prepared-context.v1"


@dataclass(frozen=True, slots=True)
class PreparedContext:
    """The four-field result. `content_bytes` is derived, so it can never disagree with `content`."""

    status: PreparedStatus
    content: str | None

    @property
    def schema(self) -> str:
        return PREPARED_SCHEMA

    @property
    def content_bytes(self) -> int:
        return 0 if self.content is None else len(self.content.encode("utf-8"))

    @classmethod
    def empty(cls) -> PreparedContext:
        return cls("empty", None)
