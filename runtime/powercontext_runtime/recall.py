"""Recall: per-Scope searches turned into bounded, ordered candidate pools."""

from __future__ import annotations

from .candidates import Candidate, Origin, clean_pool, interleave
from .models import MEMORY_ARTIFACT_ID, MEMORY_FAMILY, Scope
from .store import Store
from .text_search import SearchQuery

MEMORY_POOL = 16


def recall_memory(store: Store, scope: Scope, query: SearchQuery) -> list[Candidate]:
    """Up to 16 Memory hits per Scope, interleaved current Scope first, capped at 16, cleaned."""
    scope_ids = [scope.scope_id, *scope.context_references]
    per_scope = store.search_memory(scope_ids, query, MEMORY_POOL)
    pools = [
        [
            Candidate(
                Origin(
                    scope_id,
                    MEMORY_FAMILY,
                    MEMORY_ARTIFACT_ID,
                    hit.citation.revision,
                    hit.citation.entry_id,
                    hit.citation.entry_version_id,
                ),
                hit.text,
                scope_id == scope.scope_id,
            )
            for hit in hits
        ]
        for scope_id, hits in zip(scope_ids, per_scope, strict=True)
    ]
    return clean_pool(interleave(pools, MEMORY_POOL))
