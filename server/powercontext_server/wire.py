"""Wire JSON <-> Runtime values, both directions, and wire locations for Runtime validation errors.

The wire cites a Memory entry as
`{"memory_ref": {"family": "memory", "artifact_id": "memory", "revision": N}, "entry_id", "entry_version_id"}`;
the Runtime's `CitationInput` is flat `{revision, entry_id, entry_version_id}`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from powercontext_runtime.errors import ErrorItem, InvalidRequest
from powercontext_runtime.models import (
    MEMORY_ARTIFACT_ID,
    MEMORY_FAMILY,
    ArtifactRef,
    ArtifactRevision,
    CandidatePage,
    CandidateRecord,
    Experience,
    ExperienceFields,
    MemoryCitation,
    MemoryEntry,
    MemoryEntryPage,
    MemoryHit,
    MemoryRevision,
    PreparedContext,
    ProfileSnapshot,
    Scope,
    ScopePage,
    Topic,
    TopicHit,
)

Json = dict[str, Any]
Loc = tuple[str | int, ...]


# Citations ----------------------------------------------------------------------------------------
def citation_to_wire(citation: MemoryCitation) -> Json:
    return {
        "memory_ref": {
            "family": MEMORY_FAMILY,
            "artifact_id": MEMORY_ARTIFACT_ID,
            "revision": citation.revision,
        },
        "entry_id": citation.entry_id,
        "entry_version_id": citation.entry_version_id,
    }


def citation_from_wire(wire: Any) -> Any:
    """The flat `CitationInput` mapping; anything not shaped like a citation is left for validation."""
    if not isinstance(wire, Mapping):
        return wire
    ref = wire.get("memory_ref")
    flat = {k: v for k, v in wire.items() if k != "memory_ref"}
    if isinstance(ref, Mapping) and "revision" in ref:
        flat["revision"] = ref["revision"]
    return flat


def _citation_loc(loc: Loc) -> Loc:
    """`citation.revision` in the Runtime is `citation.memory_ref.revision` on the wire."""
    if len(loc) >= 2 and loc[0] == "citation" and loc[1] == "revision":
        return ("citation", "memory_ref", *loc[1:])
    return loc


def with_citation(body: Mapping[str, Any]) -> Json:
    data = dict(body)
    if "citation" in data:
        data["citation"] = citation_from_wire(data["citation"])
    return data


# Results ------------------------------------------------------------------------------------------
def scope_to_wire(scope: Scope) -> Json:
    return {
        "scope_id": scope.scope_id,
        "title": scope.title,
        "summary": scope.summary,
        "context_references": list(scope.context_references),
        "version": scope.version,
    }


def scope_page_to_wire(page: ScopePage) -> Json:
    return {"scopes": [scope_to_wire(s) for s in page.scopes], "next_cursor": page.next_cursor}


def entry_to_wire(entry: MemoryEntry) -> Json:
    return {
        "citation": citation_to_wire(entry.citation),
        "text": entry.text,
        "kind": entry.kind,
        "state": entry.state,
    }


def entry_page_to_wire(page: MemoryEntryPage) -> Json:
    return {"entries": [entry_to_wire(e) for e in page.entries], "next_cursor": page.next_cursor}


def hits_to_wire(hits: Iterable[MemoryHit]) -> Json:
    return {"hits": [{"citation": citation_to_wire(h.citation), "text": h.text} for h in hits]}


def prepared_to_wire(prepared: PreparedContext) -> Json:
    return {
        "schema": prepared.schema,
        "status": prepared.status,
        "content": prepared.content,
        "content_bytes": prepared.content_bytes,
    }


def artifact_ref_to_wire(ref: ArtifactRef) -> Json:
    return {"family": ref.family, "artifact_id": ref.artifact_id, "revision": ref.revision}


def experience_fields_to_wire(fields: ExperienceFields) -> Json:
    return {
        "situation": fields.situation,
        "action": fields.action,
        "outcome": fields.outcome,
        "lesson": fields.lesson,
    }


def experience_to_wire(experience: Experience) -> Json:
    return {"artifact": artifact_ref_to_wire(experience.ref), **experience_fields_to_wire(experience.fields)}


def experiences_to_wire(hits: Iterable[Experience]) -> Json:
    return {"hits": [experience_to_wire(e) for e in hits]}


def topic_fields_to_wire(topic: Topic) -> Json:
    return {"title": topic.title, "summary": topic.summary, "detail": topic.detail}


def topic_to_wire(topic: Topic) -> Json:
    return {"artifact": artifact_ref_to_wire(topic.ref), **topic_fields_to_wire(topic)}


def topic_hits_to_wire(hits: Iterable[TopicHit]) -> Json:
    return {
        "hits": [
            {
                "artifact": artifact_ref_to_wire(h.ref),
                "title": h.title,
                "summary": h.summary,
                "snippet": h.snippet,
            }
            for h in hits
        ]
    }


def candidate_to_wire(candidate: CandidateRecord) -> Json:
    proposal = candidate.proposal
    return {
        "candidate_id": candidate.candidate_id,
        "family": candidate.family,
        "state": candidate.state,
        "version": candidate.version,
        "target_artifact_id": candidate.target_artifact_id,
        "base_revision": candidate.base_revision,
        "experience": experience_fields_to_wire(proposal) if isinstance(proposal, ExperienceFields) else None,
        "profile": proposal if isinstance(proposal, str) else None,
        "committed": None if candidate.committed is None else artifact_ref_to_wire(candidate.committed),
    }


def candidate_page_to_wire(page: CandidatePage) -> Json:
    return {"candidates": [candidate_to_wire(c) for c in page.candidates], "next_cursor": page.next_cursor}


def artifact_revision_to_wire(scope_id: str, revision: ArtifactRevision) -> Json:
    out: Json = {"scope_id": scope_id, "artifact": artifact_ref_to_wire(revision.ref)}
    if isinstance(revision, MemoryRevision):
        out["memory"] = [entry_to_wire(e) for e in revision.entries]
    elif isinstance(revision, Experience):
        out["experience"] = experience_fields_to_wire(revision.fields)
    elif isinstance(revision, ProfileSnapshot):
        out["profile"] = revision.content
    else:
        out["topic"] = topic_fields_to_wire(revision)
    return out


# Error locations ----------------------------------------------------------------------------------
def in_body(loc: Loc) -> Loc:
    return ("body", *_citation_loc(loc))


def in_query(loc: Loc) -> Loc:
    return ("query", *loc)


def in_path(loc: Loc) -> Loc:
    return ("path", *loc)


def artifact_path(loc: Loc) -> Loc:
    """Exact reads by URL: the Runtime's `artifact.revision` is the path's `revision`."""
    return in_path(loc[1:] if loc[:1] == ("artifact",) else loc)


def path_scope_then_body(loc: Loc) -> Loc:
    """`update_scope`: the Scope id comes from the path, everything else from the body."""
    return in_path(loc) if loc[:1] == ("scope_id",) else in_body(loc)


@contextmanager
def located(where: Callable[[Loc], Loc]) -> Iterator[None]:
    """Re-raise Runtime `InvalidRequest` with wire locations (`body`/`query`/`path` first)."""
    try:
        yield
    except InvalidRequest as exc:
        raise InvalidRequest([ErrorItem(e.type, where(e.loc), e.msg) for e in exc.errors]) from None
