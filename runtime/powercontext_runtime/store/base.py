"""The storage interface every backend implements. Semantics live here; SQL lives in the backends."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ..models import MemoryCitation, MemoryEntry, MemoryHit, Scope
from ..text_search import SearchQuery


class Store(Protocol):
    def ping(self) -> None:
        """Raise `RetrievalUnavailable` unless the database answers."""

    def close(self) -> None: ...

    # Scopes -------------------------------------------------------------------------------------
    def create_scope(self, scope: Scope) -> Scope:
        """Insert a Scope at version 1. `ScopeAlreadyExists`; `InvalidRequest` for a missing reference."""

    def get_scope(self, scope_id: str) -> Scope | None: ...

    def list_scopes(self, after_scope_id: str | None, limit: int) -> list[Scope]:
        """Scopes with ids greater than `after_scope_id`, ascending, at most `limit`."""

    def update_scope(
        self,
        scope_id: str,
        expected_version: int,
        title: str | None,
        summary: str | None,
        context_references: Sequence[str] | None,
    ) -> Scope:
        """Apply the given fields and bump `version`. `ScopeNotFound`, `RevisionConflict`, `InvalidRequest`."""

    # Memory -------------------------------------------------------------------------------------
    def remember(self, scope_id: str, text: str, kind: str, expected_revision: int | None) -> MemoryEntry:
        """Add an entry; commits the next Memory revision."""

    def revise_memory_entry(self, scope_id: str, citation: MemoryCitation, text: str) -> MemoryEntry:
        """New version of the cited entry; `RevisionConflict` unless the citation names its head version."""

    def retire_memory_entry(self, scope_id: str, citation: MemoryCitation) -> MemoryEntry:
        """Retire the cited entry; `RevisionConflict` unless the citation names its head version."""

    def get_memory_entry(self, scope_id: str, citation: MemoryCitation) -> MemoryEntry | None:
        """The exact entry version the citation names, or None when it names nothing that existed."""

    def list_memory_entries(
        self, scope_id: str, after_position: int, limit: int
    ) -> list[tuple[int, MemoryEntry]]:
        """Active head entries in creation order with their list positions."""

    def search_memory(
        self, scope_ids: Sequence[str], query: SearchQuery, limit: int
    ) -> list[list[MemoryHit]]:
        """Per Scope (same order as `scope_ids`), up to `limit` head hits in retrieval order.

        All Scopes are read from one snapshot so a prepare never mixes two moments.
        """
