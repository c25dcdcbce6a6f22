"""Domain values as the contract's response models (generated from the spec, never restated here).

The store and the builders work on the small frozen values of `models.py`; each public Runtime
operation answers with the generated model its operation table names, built by these functions.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from powercontext_api import models as wire

from .models import (
    ArtifactRef,
    ArtifactRevision,
    CandidateRecord,
    Experience,
    ExperienceFields,
    MemoryCitation,
    MemoryEntry,
    MemoryHit,
    MemoryRevision,
    PreparedContext,
    ProfileSnapshot,
    RankedExperience,
    Scope,
    Topic,
    TopicHit,
)
from .prepare import BuiltContext, Considered


def scope(value: Scope) -> wire.ScopeDescriptor:
    return wire.ScopeDescriptor(
        scope_id=value.scope_id,
        title=value.title,
        summary=value.summary,
        context_references=list(value.context_references),
        version=value.version,
    )


def scope_list(scopes: Iterable[Scope], next_cursor: str | None) -> wire.ScopeList:
    return wire.ScopeList(scopes=[scope(s) for s in scopes], next_cursor=next_cursor)


def citation(value: MemoryCitation) -> wire.MemoryCitation:
    return wire.MemoryCitation.model_validate(_citation_fields(value))


def remember_batch_result(values: Sequence[tuple[MemoryCitation, bool]]) -> wire.RememberBatchResult:
    # Validated as one value: a model built per citation took 2.0 µs each, this 1.4 (a batch holds
    # up to 1,000).
    return wire.RememberBatchResult.model_validate(
        {"citations": [_citation_fields(c) for c, _ in values], "duplicate": [d for _, d in values]}
    )


def _citation_fields(value: MemoryCitation) -> dict[str, object]:
    return {
        "memory_ref": {"family": "memory", "artifact_id": "memory", "revision": value.revision},
        "entry_id": value.entry_id,
        "entry_version_id": value.entry_version_id,
    }


def memory_entry(value: MemoryEntry, duplicate: bool | None = None) -> wire.MemoryEntry:
    """The entry; `duplicate` only in a remember's answer."""
    entry = wire.MemoryEntry(
        citation=citation(value.citation),
        text=value.text,
        kind=value.kind,
        state=value.state,
        expires_at=value.expires_at,
    )
    if duplicate is not None:
        entry.duplicate = duplicate
    return entry


def memory_entry_history(
    entry_id: str, versions: Sequence[tuple[MemoryEntry, int | None]]
) -> wire.MemoryEntryHistory:
    """Every version with the revision that removed it, oldest first; the state is the head's."""
    head, removed = versions[-1]
    return wire.MemoryEntryHistory(
        entry_id=entry_id,
        kind=head.kind,
        state="active" if removed is None else "retired",
        versions=[
            wire.MemoryEntryVersion(
                citation=citation(entry.citation),
                text=entry.text,
                removed_revision=gone,
                expires_at=entry.expires_at,
            )
            for entry, gone in versions
        ],
    )


def memory_entry_list(entries: Iterable[MemoryEntry], next_cursor: str | None) -> wire.MemoryEntryList:
    return wire.MemoryEntryList(entries=[memory_entry(e) for e in entries], next_cursor=next_cursor)


def memory_search_result(hits: Iterable[MemoryHit]) -> wire.MemorySearchResult:
    return wire.MemorySearchResult(
        hits=[wire.MemoryHit(citation=citation(h.citation), text=h.text, score=h.score) for h in hits]
    )


def prepared(value: PreparedContext) -> wire.PreparedContext:
    # `schema` is an alias (a pydantic name), so these models are built from their wire mapping.
    return wire.PreparedContext.model_validate(
        {
            "schema": value.schema,
            "status": value.status,
            "content": value.content,
            "content_bytes": value.content_bytes,
        }
    )


def explanation(built: BuiltContext) -> wire.PreparedContextExplanation:
    value = built.result
    return wire.PreparedContextExplanation.model_validate(
        {
            "schema": value.schema,
            "status": value.status,
            "content": value.content,
            "content_bytes": value.content_bytes,
            "items": [receipt_item(c) for c in built.receipt],
        }
    )


def receipt_item(value: Considered) -> wire.ReceiptItem:
    origin = value.candidate.origin
    item = {
        "family": origin.family,
        "scope_id": origin.scope_id,
        "artifact_id": origin.artifact_id,
        "revision": origin.revision,
        "recall_rank": value.recall_rank,
        "body_bytes": len(value.candidate.body.encode("utf-8")),
        "bytes": value.rendered_bytes,
        "truncated": value.truncated,
        "included": value.included,
        "reason": value.reason,
    }
    if origin.entry_id is not None:  # Memory: the entry and its version
        item |= {"entry_id": origin.entry_id, "entry_version_id": origin.entry_version_id}
    if origin.expires_at is not None:
        item["expires_at"] = origin.expires_at
    return wire.ReceiptItem.model_validate(item)


def artifact_ref(value: ArtifactRef) -> wire.ArtifactRef:
    return wire.ArtifactRef(family=value.family, artifact_id=value.artifact_id, revision=value.revision)  # type: ignore[arg-type]  # the store writes only contract families


def experience_fields(value: ExperienceFields) -> wire.ExperienceFields:
    return wire.ExperienceFields(
        situation=value.situation, action=value.action, outcome=value.outcome, lesson=value.lesson
    )


def experience(value: Experience) -> wire.Experience:
    fields = value.fields
    return wire.Experience(
        artifact=artifact_ref(value.ref),
        situation=fields.situation,
        action=fields.action,
        outcome=fields.outcome,
        lesson=fields.lesson,
    )


def experience_hit(value: RankedExperience) -> wire.ExperienceHit:
    return wire.ExperienceHit(**dict(experience(value)), score=value.score)


def experience_search_result(hits: Iterable[RankedExperience]) -> wire.ExperienceSearchResult:
    return wire.ExperienceSearchResult(hits=[experience_hit(e) for e in hits])


def topic_fields(value: Topic) -> wire.TopicFields:
    return wire.TopicFields(title=value.title, summary=value.summary, detail=value.detail)


def topic(value: Topic) -> wire.Topic:
    return wire.Topic(
        artifact=artifact_ref(value.ref), title=value.title, summary=value.summary, detail=value.detail
    )


def topic_search_result(hits: Iterable[tuple[TopicHit, float]]) -> wire.TopicSearchResult:
    """Each hit with the score the search ranked its topic by."""
    return wire.TopicSearchResult(
        hits=[
            wire.TopicHit(
                artifact=artifact_ref(h.ref), title=h.title, summary=h.summary, snippet=h.snippet, score=score
            )
            for h, score in hits
        ]
    )


def candidate(value: CandidateRecord) -> wire.Candidate:
    proposal = value.proposal
    return wire.Candidate(
        candidate_id=value.candidate_id,
        family=value.family,  # type: ignore[arg-type]  # only reviewed families have Candidates
        state=value.state,
        version=value.version,
        target_artifact_id=value.target_artifact_id,
        base_revision=value.base_revision,
        experience=experience_fields(proposal) if isinstance(proposal, ExperienceFields) else None,
        profile=proposal if isinstance(proposal, str) else None,
        committed=None if value.committed is None else artifact_ref(value.committed),
    )


def candidate_list(candidates: Iterable[CandidateRecord], next_cursor: str | None) -> wire.CandidateList:
    return wire.CandidateList(candidates=[candidate(c) for c in candidates], next_cursor=next_cursor)


def artifact_revision(scope_id: str, value: ArtifactRevision) -> wire.ArtifactRevision:
    ref = artifact_ref(value.ref)
    if isinstance(value, MemoryRevision):
        return wire.ArtifactRevision(
            scope_id=scope_id, artifact=ref, memory=[memory_entry(e) for e in value.entries]
        )
    if isinstance(value, Experience):
        return wire.ArtifactRevision(
            scope_id=scope_id, artifact=ref, experience=experience_fields(value.fields)
        )
    if isinstance(value, ProfileSnapshot):
        return wire.ArtifactRevision(scope_id=scope_id, artifact=ref, profile=value.content)
    return wire.ArtifactRevision(scope_id=scope_id, artifact=ref, topic=topic_fields(value))
