"""The storage interface every backend implements. Semantics live in the family modules' operations
(`store/op.py`); a backend runs them and owns connections, transactions and snapshots."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Protocol

from ..models import MemoryHit, ProfileSnapshot, RankedExperience, RankedTopic
from ..search import SearchQuery
from ..vectors import EmbeddingLeg
from .op import P, R, StoreOp


class Store(Protocol):
    def ping(self) -> None:
        """Raise `RetrievalUnavailable` unless the database answers."""

    def close(self) -> None: ...

    @property
    def reads_in_process(self) -> bool:
        """Whether a read is this process's own CPU work rather than a wait on a database server."""
        ...

    def use_embeddings(self, leg: EmbeddingLeg) -> None:
        """Fuse the embedding leg into Memory recall and fill in vectors in the background."""

    def held_vector_bytes(self) -> int:
        """Bytes of searched vectors held in memory (0 without the leg)."""

    def reading(self) -> AbstractContextManager[None]:
        """Reads on this thread inside the block share one snapshot (prepare reads every family
        from one moment). Writes are not allowed inside."""

    def run(self, op: StoreOp[P, R], /, *args: P.args, **kwargs: P.kwargs) -> R:
        """Run a family operation (`scopes.create_scope`, `memory.remember`, ...) in one transaction
        of its kind. A database that does not answer is `RetrievalUnavailable`; two writers racing
        to create the same row leave the later one a `RevisionConflict`; a failed write changes
        nothing."""

    # What recall reads: ranked heads and Profiles -------------------------------------------------
    def search_memory(
        self, scope_ids: Sequence[str], query: SearchQuery, limit: int, merge_cap: int | None = None
    ) -> list[list[MemoryHit]]:
        """Per Scope (same order as `scope_ids`), up to `limit` head hits in retrieval order.

        All Scopes are read from one snapshot so a prepare never mixes two moments. With
        `merge_cap`, each Scope's hits stop where a round-robin merge of them all, capped there,
        stops taking from it (search plans it: `search.ranked_per_scope`): the caller interleaves
        the shares, and hits the merge would not use are never read.
        """

    def search_experience(
        self, scope_ids: Sequence[str], query: SearchQuery, limit: int, merge_cap: int | None = None
    ) -> list[list[RankedExperience]]:
        """Per Scope, approved Experience heads in retrieval order; `merge_cap` as for Memory."""

    def search_topics(self, scope_id: str, query: SearchQuery, limit: int) -> list[RankedTopic]: ...

    def latest_profiles(self, scope_ids: Sequence[str]) -> list[ProfileSnapshot | None]:
        """`artifacts.latest_profiles`, for recall, which does not import the store's modules."""

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
