"""ScopedContextApplication: the Runtime's one entry point, used by the HTTP handlers and directly.

Every public method takes a validated request model (see `requests.py`), so a direct call gets the
same semantic checks as an HTTP call, and returns frozen domain values (see `models.py`).
"""

from __future__ import annotations

from pydantic import MISSING

from .access import FULL_ACCESS, Principal
from .config import Settings
from .cursors import decode_cursor, encode_cursor
from .errors import EntryNotFound, InvalidRequest, ScopeNotFound
from .legacy_prepare import prepare_legacy
from .models import (
    EXPERIENCE_FAMILY,
    PROFILE_ARTIFACT_ID,
    PROFILE_FAMILY,
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
    PreparedContext,
    Scope,
    ScopePage,
    Topic,
    TopicHit,
)
from .prepared_context_builder import AssemblyOptions, Section, build_text_context
from .recall import (
    legacy_topic_body,
    recall_experience,
    recall_memory,
    recall_text_pools,
    recall_topics,
    topic_hit,
)
from .requests import (
    AssemblyInput,
    CandidateRef,
    CitationInput,
    CitedEntry,
    CreateScope,
    DecideCandidate,
    GetArtifact,
    ListCandidates,
    ListEntries,
    ListScopes,
    PrepareContext,
    ProposeExperience,
    ProposeProfile,
    PutTopic,
    Remember,
    ReviseEntry,
    SearchExperience,
    SearchMemory,
    SearchTopics,
    UpdateScope,
)
from .store import Store
from .text_search import parse_query

# Families whose recall reads the Context References as well as the current Scope.
REFERENCE_FAMILIES = frozenset({"memory", "experience", "profile"})


class ScopedContextApplication:
    def __init__(self, store: Store, settings: Settings) -> None:
        self._store = store
        self.settings = settings

    def close(self) -> None:
        self._store.close()

    def check_ready(self) -> None:
        """Raise `RetrievalUnavailable` when the store does not answer."""
        self._store.ping()

    # Scopes -------------------------------------------------------------------------------------
    def create_scope(self, request: CreateScope, principal: Principal = FULL_ACCESS) -> Scope:
        # Referencing a Scope exposes its data through prepare, so it needs read on each one.
        principal.require("server.admin", [request.scope_id])
        principal.require("scope.read", request.context_references)
        _check_references(request.scope_id, request.context_references)
        return self._store.create_scope(
            Scope(
                scope_id=request.scope_id,
                title=request.title,
                summary=request.summary,
                context_references=request.context_references,
                version=1,
            )
        )

    def get_scope(self, scope_id: str) -> Scope:
        scope = self._store.get_scope(scope_id)
        if scope is None:
            raise ScopeNotFound()
        return scope

    def list_scopes(self, request: ListScopes, principal: Principal = FULL_ACCESS) -> ScopePage:
        """Only Scopes the Principal may read; pages stay full even when many are hidden."""
        after = decode_cursor(request.cursor, "scope") if request.cursor else None
        page: list[Scope] = []
        while True:
            rows = self._store.list_scopes(after, request.limit + 1)
            for scope in rows:
                if principal.may("scope.read", scope.scope_id):
                    if len(page) == request.limit:
                        return ScopePage(tuple(page), encode_cursor("scope", page[-1].scope_id))
                    page.append(scope)
            if len(rows) <= request.limit:
                return ScopePage(tuple(page), None)
            after = rows[-1].scope_id

    def update_scope(self, request: UpdateScope, principal: Principal = FULL_ACCESS) -> Scope:
        if request.context_references is not None:
            principal.require("server.admin", [request.scope_id])
            principal.require("scope.read", request.context_references)
            _check_references(request.scope_id, request.context_references)
        else:
            principal.require("scope.write", [request.scope_id])
        return self._store.update_scope(
            request.scope_id,
            request.expected_version,
            request.title,
            request.summary,
            request.context_references,
        )

    # Memory -------------------------------------------------------------------------------------
    def remember(self, request: Remember) -> MemoryEntry:
        return self._store.remember(request.scope_id, request.text, request.kind, request.expected_revision)

    def revise_memory_entry(self, request: ReviseEntry) -> MemoryEntry:
        return self._store.revise_memory_entry(request.scope_id, _citation(request.citation), request.text)

    def retire_memory_entry(self, request: CitedEntry) -> MemoryEntry:
        return self._store.retire_memory_entry(request.scope_id, _citation(request.citation))

    def get_memory_entry(self, request: CitedEntry) -> MemoryEntry:
        entry = self._store.get_memory_entry(request.scope_id, _citation(request.citation))
        if entry is None:
            raise EntryNotFound()
        return entry

    def list_memory_entries(self, request: ListEntries) -> MemoryEntryPage:
        after = int(decode_cursor(request.cursor, "entry")) if request.cursor else 0
        rows = self._store.list_memory_entries(request.scope_id, after, request.limit + 1)
        page = rows[: request.limit]
        more = len(rows) > request.limit
        return MemoryEntryPage(
            tuple(entry for _, entry in page),
            encode_cursor("entry", str(page[-1][0])) if more else None,
        )

    def search_memory(self, request: SearchMemory) -> list[MemoryHit]:
        self.get_scope(request.scope_id)
        return self._store.search_memory([request.scope_id], parse_query(request.query), request.limit)[0]

    # Experience, Profile, Topic Memory, Candidates ---------------------------------------------
    def propose_experience(self, request: ProposeExperience) -> CandidateRecord:
        fields = ExperienceFields(request.situation, request.action, request.outcome, request.lesson)
        return self._store.propose(request.scope_id, EXPERIENCE_FAMILY, request.artifact_id, fields)

    def propose_profile(self, request: ProposeProfile) -> CandidateRecord:
        # Stored normalised to end with exactly one LF, so every snapshot renders the same way.
        content = request.content.rstrip("\n") + "\n"
        return self._store.propose(request.scope_id, PROFILE_FAMILY, PROFILE_ARTIFACT_ID, content)

    def approve_candidate(self, request: DecideCandidate) -> CandidateRecord:
        return self._store.decide_candidate(
            request.scope_id, request.candidate_id, request.expected_version, True
        )

    def reject_candidate(self, request: DecideCandidate) -> CandidateRecord:
        return self._store.decide_candidate(
            request.scope_id, request.candidate_id, request.expected_version, False
        )

    def get_candidate(self, request: CandidateRef) -> CandidateRecord:
        found = self._store.get_candidate(request.scope_id, request.candidate_id)
        if found is None:
            raise EntryNotFound()
        return found

    def list_candidates(self, request: ListCandidates) -> CandidatePage:
        after = int(decode_cursor(request.cursor, "candidate")) if request.cursor else 0
        rows = self._store.list_candidates(request.scope_id, request.state, after, request.limit + 1)
        page = rows[: request.limit]
        more = len(rows) > request.limit
        return CandidatePage(
            tuple(c for _, c in page), encode_cursor("candidate", str(page[-1][0])) if more else None
        )

    def search_experience(self, request: SearchExperience) -> list[Experience]:
        self.get_scope(request.scope_id)
        return self._store.search_experience([request.scope_id], parse_query(request.query), request.limit)[0]

    def put_topic(self, request: PutTopic) -> Topic:
        return self._store.put_topic(
            request.scope_id,
            request.artifact_id,
            request.title,
            request.summary,
            request.detail,
            request.expected_revision,
        )

    def search_topics(self, request: SearchTopics) -> list[TopicHit]:
        self.get_scope(request.scope_id)
        query = parse_query(request.query)
        return [
            topic_hit(t, query) for t in self._store.search_topics(request.scope_id, query, request.limit)
        ]

    def get_artifact(self, request: GetArtifact) -> ArtifactRevision:
        ref = ArtifactRef(request.artifact.family, request.artifact.artifact_id, request.artifact.revision)
        found = self._store.get_artifact(request.scope_id, ref)
        if found is None:
            raise EntryNotFound()
        return found

    # Prepare ------------------------------------------------------------------------------------
    def prepare_context(self, request: PrepareContext, principal: Principal = FULL_ACCESS) -> PreparedContext:
        # The total-entries policy is a validation rule: it fails before any lookup or recall.
        options = None if request.assembly is MISSING else self.assembly_options(request.assembly)
        principal.require("scope.read", [request.scope_id])
        with self._store.reading():  # every family from one snapshot
            return self._prepare(request, options, principal)

    def _prepare(
        self, request: PrepareContext, options: AssemblyOptions | None, principal: Principal
    ) -> PreparedContext:
        scope = self.get_scope(request.scope_id)
        families = REFERENCE_FAMILIES if options is None else {s.family for s in options.sections}
        if families & REFERENCE_FAMILIES:
            # RFC step 2: every Scope that will be read, before any candidate is read; all or nothing.
            principal.require("scope.read", scope.context_references)
        if options is None:
            query = parse_query(request.query)
            return prepare_legacy(
                recall_memory(self._store, scope, query),
                request.max_bytes,
                topics=recall_topics(self._store, scope, query, legacy_topic_body),
                experience=recall_experience(self._store, scope, query),
            )
        if not options.sections:
            return PreparedContext.empty()
        pools = recall_text_pools(self._store, scope, parse_query(request.query), families)
        return build_text_context(pools, options, request.max_bytes).result

    def assembly_options(self, assembly: AssemblyInput) -> AssemblyOptions:
        """The builder's options, after the configured total-entries policy."""
        total = sum(section.limit for section in assembly.sections)
        if total > self.settings.assembly_max_entries:
            raise InvalidRequest.single(
                "too_many_entries",
                ("assembly", "sections"),
                f"The section limits add up to more than the configured maximum of "
                f"{self.settings.assembly_max_entries} entries",
            )
        return AssemblyOptions(
            sections=tuple(Section(s.family, s.limit) for s in assembly.sections),
            show_confidence="confidence" in assembly.show,
            show_recall_rank="recall_rank" in assembly.show,
        )


def _citation(value: CitationInput) -> MemoryCitation:
    return MemoryCitation(value.revision, value.entry_id, value.entry_version_id)


def _check_references(scope_id: str, references: tuple[str, ...]) -> None:
    errors = []
    seen: set[str] = set()
    for i, ref in enumerate(references):
        if ref == scope_id:
            errors.append(("reference_self", "A Scope cannot reference itself."))
        elif ref in seen:
            errors.append(("reference_duplicate", "Context References must be unique."))
        else:
            seen.add(ref)
            continue
        raise InvalidRequest.single(errors[-1][0], ("context_references", i), errors[-1][1])
