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
    expires_at: str | None = None  # the store's time form (`clock.now`); None: never expires


@dataclass(frozen=True, slots=True)
class MemoryHit:
    citation: MemoryCitation
    text: str
    score: float  # the rounded BM25 score the search ranked it by
    expires_at: str | None = None


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


# Artifact families beyond Memory ------------------------------------------------------------------

EXPERIENCE_FAMILY = "experience"
PROFILE_FAMILY = "profile"
PROFILE_ARTIFACT_ID = "profile"
TOPIC_FAMILY = "topic-memory"
FAMILIES = (MEMORY_FAMILY, EXPERIENCE_FAMILY, PROFILE_FAMILY, TOPIC_FAMILY)

CandidateState = Literal["pending", "approved", "rejected"]


@dataclass(frozen=True, slots=True)
class ArtifactRef:
    family: str
    artifact_id: str
    revision: int


@dataclass(frozen=True, slots=True)
class ExperienceFields:
    situation: str
    action: str
    outcome: str
    lesson: str

    @property
    def body(self) -> str:
        """The text prepare shows (legacy item content and the Markdown body alike)."""
        return f"Situation: {self.situation}\nAction: {self.action}\nOutcome: {self.outcome}\nLesson: {self.lesson}"


@dataclass(frozen=True, slots=True)
class Experience:
    ref: ArtifactRef
    fields: ExperienceFields


@dataclass(frozen=True, slots=True)
class RankedExperience(Experience):
    """A search hit: the Experience head with the rounded BM25 score it was ranked by."""

    score: float


@dataclass(frozen=True, slots=True)
class ProfileSnapshot:
    ref: ArtifactRef
    content: str


@dataclass(frozen=True, slots=True)
class Topic:
    ref: ArtifactRef
    title: str
    summary: str
    detail: str


@dataclass(frozen=True, slots=True)
class RankedTopic(Topic):
    """A search hit: the topic head with the rounded BM25 score it was ranked by."""

    score: float


@dataclass(frozen=True, slots=True)
class TopicHit:
    ref: ArtifactRef
    title: str
    summary: str
    snippet: str | None


Proposal = ExperienceFields | str  # Experience fields, or Profile Markdown


@dataclass(frozen=True, slots=True)
class CandidateRecord:
    """A proposed change awaiting review. `committed` is the revision approval created."""

    candidate_id: str
    family: str
    state: CandidateState
    version: int
    target_artifact_id: str | None
    base_revision: int
    proposal: Proposal
    committed: ArtifactRef | None


@dataclass(frozen=True, slots=True)
class CandidatePage:
    candidates: tuple[CandidateRecord, ...]
    next_cursor: str | None


@dataclass(frozen=True, slots=True)
class MemoryRevision:
    """An exact read of Memory at one revision: the entries live in it, in creation order."""

    ref: ArtifactRef
    entries: tuple[MemoryEntry, ...]


ArtifactRevision = Experience | ProfileSnapshot | Topic | MemoryRevision
