"""ScopedContextApplication: the Runtime's one entry point, used by the HTTP server and directly.

There is one public method per operation of the contract, named by its operationId. Each takes the
generated request models of that operation (its parameters, then its body) and answers with the
generated response model, so a direct call meets exactly the rules an HTTP call meets: the
structure is the generated models', and on top of it the Runtime adds only what a schema cannot
say (duplicate families, the total-entries policy, references, existence, access).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TypeVar

from pydantic import MISSING

from powercontext_api import models as wire
from powercontext_api.operations import API_VERSION

from . import responses
from .access import ACTIONS, FULL_ACCESS, Principal
from .config import Settings
from .context_request import build_context, scope_of
from .cursors import decode_cursor, encode_cursor, page_of
from .errors import EntryNotFound
from .models import (
    EXPERIENCE_FAMILY,
    FAMILIES,
    PREPARED_SCHEMA,
    PROFILE_ARTIFACT_ID,
    PROFILE_FAMILY,
    ArtifactRef,
    ArtifactRevision,
    Experience,
    ExperienceFields,
    Scope,
    Topic,
)
from .operation import operation
from .prepare import BuiltContext
from .recall import parse_query, topic_hit
from .request_rules import check_references, expiry, max_bytes_limits
from .request_rules import memory_citation as _citation
from .store import Store, artifacts, candidates, clock, memory, scopes, topics
from .vectors import EmbeddingLeg

T = TypeVar("T")

OK = wire.HealthStatus(status="ok")


PrepareObserver = Callable[[BuiltContext], None]
# Called with (entries stored, entries answered as duplicates) after each remember and batch.
RememberObserver = Callable[[int, int], None]


class ScopedContextApplication:
    def __init__(self, store: Store, settings: Settings) -> None:
        self._store = store
        self.settings = settings
        self._prepare_observers: tuple[PrepareObserver, ...] = ()
        self._remember_observers: tuple[RememberObserver, ...] = ()

    def observe_prepares(self, observer: PrepareObserver) -> None:
        """Call `observer` with every prepare's built context and receipt (prepare and explain),
        after it is built; the server's metrics count candidates and bytes this way."""
        self._prepare_observers = (*self._prepare_observers, observer)

    @property
    def reads_in_process(self) -> bool:
        """Whether a read is this process's own CPU work (embedded SQLite) rather than a wait on a
        database server."""
        return self._store.reads_in_process

    def use_embeddings(self, leg: EmbeddingLeg) -> None:
        """Turn on the optional embedding leg of Memory, Experience and Topic Memory recall (the
        server does, when configured).

        The leg's cosine is a matrix-vector product over a Scope's vectors, bound by memory: the
        process that runs it does best with numpy's BLAS on one thread (`one_blas_thread`)."""
        self._store.use_embeddings(leg)

    def observe_remembers(self, observer: RememberObserver) -> None:
        """Call `observer` with how many entries each remember or batch stored and how many it
        answered as duplicates; the server's metrics count them this way."""
        self._remember_observers = (*self._remember_observers, observer)

    def _remembered(self, flags: Sequence[bool]) -> None:
        for observe in self._remember_observers:
            observe(flags.count(False), flags.count(True))

    def held_vector_bytes(self) -> int:
        """Bytes of searched vectors this process holds in memory, every family's (0 without the
        embedding leg): at most the leg's `cache_bytes`, unless one Scope alone is larger."""
        return self._store.held_vector_bytes()

    def close(self) -> None:
        self._store.close()

    # Service ------------------------------------------------------------------------------------
    @operation
    def health_live(self, *, principal: Principal = FULL_ACCESS) -> wire.HealthStatus:
        return OK

    @operation
    def health_ready(self, *, principal: Principal = FULL_ACCESS) -> wire.HealthStatus:
        """OK, or `RetrievalUnavailable` when the store does not answer."""
        self._store.ping()
        return OK

    @operation
    def get_capabilities(self, *, principal: Principal = FULL_ACCESS) -> wire.Capabilities:
        low, high, default = max_bytes_limits()
        return wire.Capabilities(
            api_version=API_VERSION,
            families=list(FAMILIES),
            # `schema` is an alias, so this part is validated from its wire mapping.
            prepare=wire.PrepareCapabilities.model_validate(
                {
                    "legacy": True,
                    "assembly": True,
                    "schema": PREPARED_SCHEMA,
                    "min_max_bytes": low,
                    "max_max_bytes": high,
                    "default_max_bytes": default,
                    "assembly_families": list(FAMILIES),
                    "assembly_formats": ["markdown"],
                    "assembly_max_entries": self.settings.assembly_max_entries,
                }
            ),
        )

    # Scopes -------------------------------------------------------------------------------------
    @operation
    def create_scope(
        self, request: wire.ScopeCreateRequest, *, principal: Principal = FULL_ACCESS
    ) -> wire.ScopeDescriptor:
        references = tuple(request.context_references)
        # Referencing a Scope exposes its data through prepare, so it needs read on each one.
        principal.require("scope.read", references)
        check_references(request.scope_id, references)
        scope = Scope(
            scope_id=request.scope_id,
            title=request.title,
            summary=request.summary,
            context_references=references,
            version=1,
        )
        return responses.scope(self._store.run(scopes.create_scope, scope))

    @operation
    def get_scope(
        self, request: wire.GetScopeParameters, *, principal: Principal = FULL_ACCESS
    ) -> wire.ScopeDescriptor:
        return responses.scope(self._scope(request.scope_id))

    @operation
    def list_scopes(
        self, request: wire.ListScopesParameters, *, principal: Principal = FULL_ACCESS
    ) -> wire.ScopeList:
        """Only Scopes the Principal may read; pages stay full even when many are hidden."""
        after = None if request.cursor is MISSING else decode_cursor(request.cursor, "scope")
        page: list[Scope] = []
        while True:
            rows = self._store.run(scopes.list_scopes, after, request.limit + 1)
            for scope in rows:
                if principal.may("scope.read", scope.scope_id):
                    if len(page) == request.limit:
                        return responses.scope_list(page, encode_cursor("scope", page[-1].scope_id))
                    page.append(scope)
            if len(rows) <= request.limit:
                return responses.scope_list(page, None)
            after = rows[-1].scope_id

    @operation
    def get_scope_grants(
        self, request: wire.GetScopeGrantsParameters, *, principal: Principal = FULL_ACCESS
    ) -> wire.ScopeGrants:
        actions = [action for action in ACTIONS if principal.may(action, request.scope_id)]
        return wire.ScopeGrants(scope_id=request.scope_id, actions=actions)

    @operation
    def update_scope(
        self,
        target: wire.UpdateScopeParameters,
        request: wire.ScopeUpdateRequest,
        *,
        principal: Principal = FULL_ACCESS,
    ) -> wire.ScopeDescriptor:
        references = None if request.context_references is MISSING else tuple(request.context_references)
        if references is not None:
            principal.require("server.admin", [target.scope_id])
            principal.require("scope.read", references)
            check_references(target.scope_id, references)
        scope = self._store.run(
            scopes.update_scope,
            target.scope_id,
            request.expected_version,
            None if request.title is MISSING else request.title,
            None if request.summary is MISSING else request.summary,
            references,
        )
        return responses.scope(scope)

    @operation
    def delete_scope(
        self, target: wire.DeleteScopeParameters, *, principal: Principal = FULL_ACCESS
    ) -> wire.ScopeErasure:
        self._store.run(scopes.delete_scope, target.scope_id)
        return wire.ScopeErasure(scope_id=target.scope_id)

    @operation
    def export_scope(
        self, request: wire.ExportScopeParameters, *, principal: Principal = FULL_ACCESS
    ) -> Iterator[bytes]:
        """The Scope's export in chunks of whole JSON lines, read from one snapshot as they are
        consumed; close the iterator to end it early. `ScopeNotFound` before the first chunk."""
        return self._store.export_scope(request.scope_id)

    @operation
    def import_scope(
        self,
        target: wire.ImportScopeParameters,
        lines: Iterable[bytes],
        *,
        principal: Principal = FULL_ACCESS,
    ) -> wire.ScopeImport:
        """Recreate the Scope an export's `lines` hold, under `target.scope_id`, in one transaction;
        as creating it would, this needs `scope.read` on every Scope it references."""
        rows, indexed = self._store.import_scope(
            target.scope_id, lines, lambda references: principal.require("scope.read", references)
        )
        return wire.ScopeImport(scope_id=target.scope_id, rows=rows, indexed=indexed)

    # Memory -------------------------------------------------------------------------------------
    @operation
    def remember(
        self, request: wire.RememberRequest, *, principal: Principal = FULL_ACCESS
    ) -> wire.MemoryEntry:
        expected = None if request.expected_revision is MISSING else request.expected_revision
        given = (request.kind, expected, expiry(request.expires_at, ("expires_at",)), request.deduplicate)
        entry = self._store.run(memory.remember, request.scope_id, request.text, *given)
        self._remembered([entry.duplicate])
        return responses.memory_entry(entry, duplicate=entry.duplicate)

    @operation
    def remember_batch(
        self, request: wire.RememberBatchRequest, *, principal: Principal = FULL_ACCESS
    ) -> wire.RememberBatchResult:
        expected = None if request.expected_revision is MISSING else request.expected_revision
        entries = [
            (entry.text, entry.kind, expiry(entry.expires_at, ("entries", i, "expires_at")))
            for i, entry in enumerate(request.entries)
        ]
        cited = self._store.run(
            memory.remember_batch, request.scope_id, entries, expected, request.deduplicate
        )
        self._remembered([duplicate for _, duplicate in cited])
        return responses.remember_batch_result(cited)

    @operation
    def erase_memory_entry(
        self, request: wire.EntryEraseRequest, *, principal: Principal = FULL_ACCESS
    ) -> wire.EntryErasure:
        revision, versions = self._store.run(memory.erase_memory_entry, request.scope_id, request.entry_id)
        return wire.EntryErasure(
            scope_id=request.scope_id, entry_id=request.entry_id, versions=versions, memory_revision=revision
        )

    @operation
    def revise_memory_entry(
        self, request: wire.ReviseEntryRequest, *, principal: Principal = FULL_ACCESS
    ) -> wire.MemoryEntry:
        keep, expires = request.expires_at is MISSING, expiry(request.expires_at, ("expires_at",))
        entry = self._store.run(
            memory.revise_memory_entry,
            request.scope_id,
            _citation(request.citation),
            request.text,
            keep,
            expires,
        )
        return responses.memory_entry(entry)

    @operation
    def retire_memory_entry(
        self, request: wire.EntryCitationRequest, *, principal: Principal = FULL_ACCESS
    ) -> wire.MemoryEntry:
        entry = self._store.run(memory.retire_memory_entry, request.scope_id, _citation(request.citation))
        return responses.memory_entry(entry)

    @operation
    def get_memory_entry(
        self, request: wire.EntryCitationRequest, *, principal: Principal = FULL_ACCESS
    ) -> wire.MemoryEntry:
        entry = _found(
            self._store.run(memory.get_memory_entry, request.scope_id, _citation(request.citation))
        )
        return responses.memory_entry(entry)

    @operation
    def get_memory_entry_history(
        self, request: wire.EntryHistoryRequest, *, principal: Principal = FULL_ACCESS
    ) -> wire.MemoryEntryHistory:
        versions = _found(self._store.run(memory.memory_entry_history, request.scope_id, request.entry_id))
        return responses.memory_entry_history(request.entry_id, versions)

    @operation
    def list_memory_entries(
        self, request: wire.ListEntriesRequest, *, principal: Principal = FULL_ACCESS
    ) -> wire.MemoryEntryList:
        after = 0 if request.cursor is MISSING else int(decode_cursor(request.cursor, "entry"))
        live_at = None if request.include_expired else clock.now()
        rows = self._store.run(
            memory.list_memory_entries, request.scope_id, after, request.limit + 1, live_at
        )
        return responses.memory_entry_list(*page_of(rows, request.limit, "entry"))

    @operation
    def search_memory(
        self, request: wire.MemorySearchRequest, *, principal: Principal = FULL_ACCESS
    ) -> wire.MemorySearchResult:
        self._scope(request.scope_id)
        hits = self._store.search_memory([request.scope_id], parse_query(request.query), request.limit)[0]
        return responses.memory_search_result(hits)

    # Experience, Profile, Topic Memory, Candidates ---------------------------------------------
    @operation
    def propose_experience(
        self, request: wire.ProposeExperienceRequest, *, principal: Principal = FULL_ACCESS
    ) -> wire.Candidate:
        fields = ExperienceFields(request.situation, request.action, request.outcome, request.lesson)
        target = None if request.artifact_id is MISSING else request.artifact_id
        return responses.candidate(
            self._store.run(candidates.propose, request.scope_id, EXPERIENCE_FAMILY, target, fields)
        )

    @operation
    def propose_profile(
        self, request: wire.ProposeProfileRequest, *, principal: Principal = FULL_ACCESS
    ) -> wire.Candidate:
        # Stored normalised to end with exactly one LF, so every snapshot renders the same way.
        content = request.content.rstrip("\n") + "\n"
        candidate = self._store.run(
            candidates.propose, request.scope_id, PROFILE_FAMILY, PROFILE_ARTIFACT_ID, content
        )
        return responses.candidate(candidate)

    @operation
    def get_profile(
        self, request: wire.ProfileGetRequest, *, principal: Principal = FULL_ACCESS
    ) -> wire.Profile:
        self._scope(request.scope_id)
        [found] = self._store.run(artifacts.latest_profiles, [request.scope_id])
        if found is None:
            raise EntryNotFound()
        return wire.Profile(artifact=responses.artifact_ref(found.ref), content=found.content)

    @operation
    def approve_candidate(
        self, request: wire.CandidateDecisionRequest, *, principal: Principal = FULL_ACCESS
    ) -> wire.Candidate:
        return self._decide(request, approve=True)

    @operation
    def reject_candidate(
        self, request: wire.CandidateDecisionRequest, *, principal: Principal = FULL_ACCESS
    ) -> wire.Candidate:
        return self._decide(request, approve=False)

    @operation
    def get_candidate(
        self, request: wire.CandidateGetRequest, *, principal: Principal = FULL_ACCESS
    ) -> wire.Candidate:
        found = _found(self._store.run(candidates.get_candidate, request.scope_id, request.candidate_id))
        return responses.candidate(found)

    @operation
    def list_candidates(
        self, request: wire.ListCandidatesRequest, *, principal: Principal = FULL_ACCESS
    ) -> wire.CandidateList:
        after = 0 if request.cursor is MISSING else int(decode_cursor(request.cursor, "candidate"))
        state = None if request.state is MISSING else request.state
        rows = self._store.run(candidates.list_candidates, request.scope_id, state, after, request.limit + 1)
        return responses.candidate_list(*page_of(rows, request.limit, "candidate"))

    @operation
    def search_experience(
        self, request: wire.SearchRequest, *, principal: Principal = FULL_ACCESS
    ) -> wire.ExperienceSearchResult:
        self._scope(request.scope_id)
        hits = self._store.search_experience([request.scope_id], parse_query(request.query), request.limit)[0]
        return responses.experience_search_result(hits)

    @operation
    def get_experience(
        self, request: wire.ExperienceGetRequest, *, principal: Principal = FULL_ACCESS
    ) -> wire.Experience:
        ref = request.artifact
        found = self._artifact(request.scope_id, ArtifactRef(ref.family, ref.artifact_id, ref.revision))
        assert isinstance(found, Experience)  # the store answers a family's ref with that family
        return responses.experience(found)

    @operation
    def put_topic(self, request: wire.PutTopicRequest, *, principal: Principal = FULL_ACCESS) -> wire.Topic:
        topic = self._store.run(
            topics.put_topic,
            request.scope_id,
            None if request.artifact_id is MISSING else request.artifact_id,
            request.title,
            request.summary,
            request.detail,
            None if request.expected_revision is MISSING else request.expected_revision,
        )
        return responses.topic(topic)

    @operation
    def search_topics(
        self, request: wire.SearchRequest, *, principal: Principal = FULL_ACCESS
    ) -> wire.TopicSearchResult:
        self._scope(request.scope_id)
        query = parse_query(request.query)
        found = self._store.search_topics(request.scope_id, query, request.limit)
        return responses.topic_search_result((topic_hit(t, query), t.score) for t in found)

    @operation
    def get_topic(self, request: wire.TopicGetRequest, *, principal: Principal = FULL_ACCESS) -> wire.Topic:
        ref = request.artifact
        found = self._artifact(request.scope_id, ArtifactRef(ref.family, ref.artifact_id, ref.revision))
        assert isinstance(found, Topic)
        return responses.topic(found)

    @operation
    def get_artifact_revision(
        self, request: wire.GetArtifactRevisionParameters, *, principal: Principal = FULL_ACCESS
    ) -> wire.ArtifactRevision:
        ref = ArtifactRef(request.family, request.artifact_id, request.revision)
        return responses.artifact_revision(request.scope_id, self._artifact(request.scope_id, ref))

    # Prepare ------------------------------------------------------------------------------------
    @operation
    def prepare_context(
        self, request: wire.PrepareContextRequest, *, principal: Principal = FULL_ACCESS
    ) -> wire.PreparedContext:
        return responses.prepared(self._prepare(request, principal).result)

    @operation
    def explain_prepare_context(
        self, request: wire.PrepareContextRequest, *, principal: Principal = FULL_ACCESS
    ) -> wire.PreparedContextExplanation:
        return responses.explanation(self._prepare(request, principal))

    def _prepare(self, request: wire.PrepareContextRequest, principal: Principal) -> BuiltContext:
        built = build_context(self._store, request, principal, self.settings.assembly_max_entries)
        for observe in self._prepare_observers:
            observe(built)
        return built

    def _decide(self, request: wire.CandidateDecisionRequest, approve: bool) -> wire.Candidate:
        decided = self._store.run(
            candidates.decide_candidate,
            request.scope_id,
            request.candidate_id,
            request.expected_version,
            approve,
        )
        return responses.candidate(decided)

    # Lookups ------------------------------------------------------------------------------------
    def _scope(self, scope_id: str) -> Scope:
        return scope_of(self._store, scope_id)

    def _artifact(self, scope_id: str, ref: ArtifactRef) -> ArtifactRevision:
        found = self._store.run(artifacts.get_artifact, scope_id, ref)
        if found is None:
            raise EntryNotFound()
        return found


def _found(value: T | None) -> T:
    """`value`, or `EntryNotFound` when the store found nothing."""
    if value is None:
        raise EntryNotFound()
    return value
