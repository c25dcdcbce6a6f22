"""The storage interface every backend implements. Semantics live here; SQL lives in the backends."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Protocol

from ..models import (
    ArtifactRef,
    ArtifactRevision,
    CandidateRecord,
    MemoryCitation,
    MemoryEntry,
    MemoryHit,
    ProfileSnapshot,
    Proposal,
    RankedExperience,
    RankedTopic,
    Scope,
    Topic,
)
from ..search import SearchQuery


class Store(Protocol):
    def ping(self) -> None:
        """Raise `RetrievalUnavailable` unless the database answers."""

    def close(self) -> None: ...

    def reading(self) -> AbstractContextManager[None]:
        """Reads on this thread inside the block share one snapshot (prepare reads every family
        from one moment). Writes are not allowed inside."""

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

    def delete_scope(self, scope_id: str) -> None:
        """Delete the Scope and all it holds; `ScopeReferenced` while another Scope references it."""

    # Memory -------------------------------------------------------------------------------------
    def remember(self, scope_id: str, text: str, kind: str, expected_revision: int | None) -> MemoryEntry:
        """Add an entry; commits the next Memory revision."""

    def remember_batch(
        self, scope_id: str, entries: Sequence[tuple[str, str]], expected_revision: int | None
    ) -> list[MemoryCitation]:
        """Add (text, kind) entries in order in one transaction, one Memory revision each."""

    def erase_memory_entry(self, scope_id: str, entry_id: str) -> tuple[int, int]:
        """Delete every version of an entry; (the Memory revision committed, versions erased).
        `EntryNotFound`, or `EntryErased` when it is already gone."""

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
        self, scope_ids: Sequence[str], query: SearchQuery, limit: int, merge_cap: int | None = None
    ) -> list[list[MemoryHit]]:
        """Per Scope (same order as `scope_ids`), up to `limit` head hits in retrieval order.

        All Scopes are read from one snapshot so a prepare never mixes two moments. With
        `merge_cap`, each Scope's hits stop where a round-robin merge of them all, capped there,
        stops taking from it (search plans it: `search.ranked_per_scope`): the caller interleaves
        the shares, and hits the merge would not use are never read.
        """

    # Experience, Profile, Topic Memory, Candidates -------------------------------------------------
    def propose(
        self, scope_id: str, family: str, target_artifact_id: str | None, proposal: Proposal
    ) -> CandidateRecord:
        """A pending Candidate; `EntryNotFound` when `target_artifact_id` names no Experience."""

    def decide_candidate(
        self, scope_id: str, candidate_id: str, expected_version: int, approve: bool
    ) -> CandidateRecord:
        """Approve (commit the next revision) or reject. `RevisionConflict` when stale or decided."""

    def get_candidate(self, scope_id: str, candidate_id: str) -> CandidateRecord | None: ...

    def list_candidates(
        self, scope_id: str, state: str | None, after_position: int, limit: int
    ) -> list[tuple[int, CandidateRecord]]: ...

    def put_topic(
        self,
        scope_id: str,
        artifact_id: str | None,
        title: str,
        summary: str,
        detail: str,
        expected_revision: int | None,
    ) -> Topic:
        """Create (`artifact_id` None or new) or revise a topic; commits its next revision."""

    def get_artifact(self, scope_id: str, ref: ArtifactRef) -> ArtifactRevision | None:
        """The exact revision, or None. `ScopeNotFound` for an unknown Scope."""

    def search_experience(
        self, scope_ids: Sequence[str], query: SearchQuery, limit: int, merge_cap: int | None = None
    ) -> list[list[RankedExperience]]:
        """Per Scope, approved Experience heads in retrieval order; `merge_cap` as for Memory."""

    def search_topics(self, scope_id: str, query: SearchQuery, limit: int) -> list[RankedTopic]: ...

    def latest_profiles(self, scope_ids: Sequence[str]) -> list[ProfileSnapshot | None]:
        """Per Scope, the latest committed Profile snapshot or None."""

    # Moving a Scope -----------------------------------------------------------------------------
    def export_scope(self, scope_id: str) -> Iterator[bytes]:
        """The Scope's export (`powercontext.scope-export`), in chunks of whole lines, from one
        snapshot held until the iterator ends or is closed. `ScopeNotFound` before the first chunk."""

    def import_scope(
        self, scope_id: str, lines: Iterable[bytes], check_references: Callable[[Sequence[str]], None]
    ) -> tuple[dict[str, int], int]:
        """Recreate an exported Scope under `scope_id` in one transaction, after `check_references`
        accepted the Scopes it references; (lines imported by type, documents indexed).
        `InvalidExport` (nothing written) for a stream that is no valid export, `ScopeAlreadyExists`."""
