"""Recall: per-Scope searches turned into bounded, ordered candidate pools per family (prepare
cleans them: `prepare/receipt.py`).

Memory and Experience search the current Scope and then each Context Reference in configured
order, keep each Scope's hit order, and interleave them into a pool capped at 16 and 8: search
plans the merge (it returns each Scope's share of the capped pool, `search.ranked_per_scope`),
recall only interleaves the shares. Topic Memory
searches the current Scope only (8). Profile takes the latest committed snapshot of the current
Scope, then of each Context Reference. Only the families asked for are read.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING

from ..models import (
    EXPERIENCE_FAMILY,
    MEMORY_ARTIFACT_ID,
    MEMORY_FAMILY,
    PROFILE_FAMILY,
    TOPIC_FAMILY,
    ArtifactRef,
    Scope,
    Topic,
    TopicHit,
)
from ..search import SearchQuery, first_match
from .pools import Candidate, Origin, interleave

if TYPE_CHECKING:  # only a type here: recall runs on whatever store the application gives it
    from ..store import Store

MEMORY_POOL = 16
EXPERIENCE_POOL = 8
TOPIC_POOL = 8
SNIPPET_CHARS = 240
SNIPPET_LEAD = 80

TopicBody = Callable[[TopicHit], str]


def legacy_topic_body(hit: TopicHit) -> str:
    """Legacy item content: compact JSON of title, summary and, when present, snippet."""
    data = {"title": hit.title, "summary": hit.summary}
    if hit.snippet is not None:
        data["snippet"] = hit.snippet
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def text_topic_body(hit: TopicHit) -> str:
    body = f"Title: {hit.title}\n\nSummary: {hit.summary}"
    return body if hit.snippet is None else f"{body}\n\nSnippet: {hit.snippet}"


def topic_snippet(detail: str, query: SearchQuery) -> str | None:
    """A window of `detail` around the first place a query term occurs (as the index sees words:
    normalised and stemmed), or None."""
    found = first_match(detail, {"".join(term) for term in query.terms})
    if found is None:
        return None
    start = max(0, found - SNIPPET_LEAD)
    return detail[start : start + SNIPPET_CHARS].strip() or None


def topic_hit(topic: Topic, query: SearchQuery) -> TopicHit:
    return TopicHit(topic.ref, topic.title, topic.summary, topic_snippet(topic.detail, query))


def _origin(scope_id: str, ref: ArtifactRef) -> Origin:
    return Origin(scope_id, ref.family, ref.artifact_id, ref.revision)


def recall_memory(store: Store, scope: Scope, query: SearchQuery) -> list[Candidate]:
    scope_ids = [scope.scope_id, *scope.context_references]
    per_scope = store.search_memory(scope_ids, query, MEMORY_POOL, merge_cap=MEMORY_POOL)
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
                    hit.expires_at,
                ),
                hit.text,
                scope_id == scope.scope_id,
            )
            for hit in hits
        ]
        for scope_id, hits in zip(scope_ids, per_scope, strict=True)
    ]
    return interleave(pools)  # the shares hold MEMORY_POOL hits at most


def recall_experience(store: Store, scope: Scope, query: SearchQuery) -> list[Candidate]:
    scope_ids = [scope.scope_id, *scope.context_references]
    per_scope = store.search_experience(scope_ids, query, EXPERIENCE_POOL, merge_cap=EXPERIENCE_POOL)
    pools = [
        [Candidate(_origin(scope_id, e.ref), e.fields.body, scope_id == scope.scope_id) for e in hits]
        for scope_id, hits in zip(scope_ids, per_scope, strict=True)
    ]
    return interleave(pools)  # the shares hold EXPERIENCE_POOL hits at most


def recall_topics(store: Store, scope: Scope, query: SearchQuery, body: TopicBody) -> list[Candidate]:
    topics = store.search_topics(scope.scope_id, query, TOPIC_POOL)
    return [Candidate(_origin(scope.scope_id, t.ref), body(topic_hit(t, query)), True) for t in topics]


def recall_profiles(store: Store, scope: Scope) -> list[Candidate]:
    scope_ids = [scope.scope_id, *scope.context_references]
    snapshots = store.latest_profiles(scope_ids)
    return [
        Candidate(_origin(scope_id, s.ref), s.content, scope_id == scope.scope_id)
        for scope_id, s in zip(scope_ids, snapshots, strict=True)
        if s is not None
    ]


_RECALL_ORDER = (MEMORY_FAMILY, EXPERIENCE_FAMILY, PROFILE_FAMILY, TOPIC_FAMILY)


def recall_text_pools(
    store: Store, scope: Scope, query: SearchQuery, families: Collection[str]
) -> dict[str, Sequence[Candidate]]:
    """Pools for an assembly request: exactly the selected families, nothing else is read. The
    families that read every referenced Scope come first, in a fixed order: the store looks the
    Scopes up once for all of them (Topic Memory reads the Scope alone), and the statements a
    prepare sends do not depend on a set's order."""
    pools: dict[str, Sequence[Candidate]] = {}
    for family in sorted(families, key=_RECALL_ORDER.index):
        if family == MEMORY_FAMILY:
            pools[family] = recall_memory(store, scope, query)
        elif family == EXPERIENCE_FAMILY:
            pools[family] = recall_experience(store, scope, query)
        elif family == TOPIC_FAMILY:
            pools[family] = recall_topics(store, scope, query, text_topic_body)
        elif family == PROFILE_FAMILY:
            pools[family] = recall_profiles(store, scope)
    return pools
