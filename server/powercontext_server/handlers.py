"""One method per operationId: wire JSON -> Runtime request -> one Runtime call -> wire JSON.

Connexion resolves each operationId to a bound method of `Handlers` (see `app.py`), so the Runtime
reaches the handlers without module globals. Request bodies arrive already checked against the
OpenAPI document; the Runtime request models apply the semantic rules again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from powercontext_runtime.access import Principal
from powercontext_runtime.application import ScopedContextApplication
from powercontext_runtime.models import Experience, Topic
from powercontext_runtime.requests import (
    CandidateRef,
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
    parse_request,
)

from . import wire
from .wire import Json

Body = Mapping[str, Any]


class Handlers:
    def __init__(self, application: ScopedContextApplication, capabilities: Json) -> None:
        self._app = application
        self._capabilities = capabilities

    # Service ------------------------------------------------------------------------------------
    def health_live(self) -> Json:
        return {"status": "ok"}

    def health_ready(self) -> Json:
        self._app.check_ready()
        return {"status": "ok"}

    def get_capabilities(self) -> Json:
        return self._capabilities

    # Scopes -------------------------------------------------------------------------------------
    def create_scope(self, body: Body, principal: Principal) -> tuple[Json, int]:
        with wire.located(wire.in_body):
            scope = self._app.create_scope(parse_request(CreateScope, body), principal)
        return wire.scope_to_wire(scope), 201

    def list_scopes(self, principal: Principal, limit: int = 50, cursor: str | None = None) -> Json:
        query: dict[str, Any] = {"limit": limit}
        if cursor is not None:
            query["cursor"] = cursor
        with wire.located(wire.in_query):
            page = self._app.list_scopes(parse_request(ListScopes, query), principal)
        return wire.scope_page_to_wire(page)

    def get_scope(self, scope_id: str) -> Json:
        return wire.scope_to_wire(self._app.get_scope(scope_id))

    def update_scope(self, scope_id: str, body: Body, principal: Principal) -> Json:
        with wire.located(wire.path_scope_then_body):
            scope = self._app.update_scope(
                parse_request(UpdateScope, {**body, "scope_id": scope_id}), principal
            )
        return wire.scope_to_wire(scope)

    # Memory -------------------------------------------------------------------------------------
    def remember(self, body: Body) -> Json:
        with wire.located(wire.in_body):
            entry = self._app.remember(parse_request(Remember, body))
        return wire.entry_to_wire(entry)

    def revise_memory_entry(self, body: Body) -> Json:
        with wire.located(wire.in_body):
            entry = self._app.revise_memory_entry(parse_request(ReviseEntry, wire.with_citation(body)))
        return wire.entry_to_wire(entry)

    def retire_memory_entry(self, body: Body) -> Json:
        with wire.located(wire.in_body):
            entry = self._app.retire_memory_entry(parse_request(CitedEntry, wire.with_citation(body)))
        return wire.entry_to_wire(entry)

    def get_memory_entry(self, body: Body) -> Json:
        with wire.located(wire.in_body):
            entry = self._app.get_memory_entry(parse_request(CitedEntry, wire.with_citation(body)))
        return wire.entry_to_wire(entry)

    def list_memory_entries(self, body: Body) -> Json:
        with wire.located(wire.in_body):
            page = self._app.list_memory_entries(parse_request(ListEntries, body))
        return wire.entry_page_to_wire(page)

    def search_memory(self, body: Body) -> Json:
        with wire.located(wire.in_body):
            hits = self._app.search_memory(parse_request(SearchMemory, body))
        return wire.hits_to_wire(hits)

    # Experience, Profile, Candidates, Topic Memory, exact reads -------------------------------------
    def propose_experience(self, body: Body) -> Json:
        with wire.located(wire.in_body):
            candidate = self._app.propose_experience(parse_request(ProposeExperience, body))
        return wire.candidate_to_wire(candidate)

    def search_experience(self, body: Body) -> Json:
        with wire.located(wire.in_body):
            hits = self._app.search_experience(parse_request(SearchExperience, body))
        return wire.experiences_to_wire(hits)

    def get_experience(self, body: Body) -> Json:
        with wire.located(wire.in_body):
            found = self._app.get_artifact(parse_request(GetArtifact, body))
        assert isinstance(found, Experience)
        return wire.experience_to_wire(found)

    def propose_profile(self, body: Body) -> Json:
        with wire.located(wire.in_body):
            candidate = self._app.propose_profile(parse_request(ProposeProfile, body))
        return wire.candidate_to_wire(candidate)

    def approve_candidate(self, body: Body) -> Json:
        with wire.located(wire.in_body):
            candidate = self._app.approve_candidate(parse_request(DecideCandidate, body))
        return wire.candidate_to_wire(candidate)

    def reject_candidate(self, body: Body) -> Json:
        with wire.located(wire.in_body):
            candidate = self._app.reject_candidate(parse_request(DecideCandidate, body))
        return wire.candidate_to_wire(candidate)

    def list_candidates(self, body: Body) -> Json:
        with wire.located(wire.in_body):
            page = self._app.list_candidates(parse_request(ListCandidates, body))
        return wire.candidate_page_to_wire(page)

    def get_candidate(self, body: Body) -> Json:
        with wire.located(wire.in_body):
            candidate = self._app.get_candidate(parse_request(CandidateRef, body))
        return wire.candidate_to_wire(candidate)

    def put_topic(self, body: Body) -> Json:
        with wire.located(wire.in_body):
            topic = self._app.put_topic(parse_request(PutTopic, body))
        return wire.topic_to_wire(topic)

    def search_topics(self, body: Body) -> Json:
        with wire.located(wire.in_body):
            hits = self._app.search_topics(parse_request(SearchTopics, body))
        return wire.topic_hits_to_wire(hits)

    def get_topic(self, body: Body) -> Json:
        with wire.located(wire.in_body):
            found = self._app.get_artifact(parse_request(GetArtifact, body))
        assert isinstance(found, Topic)
        return wire.topic_to_wire(found)

    def get_artifact_revision(self, scope_id: str, family: str, artifact_id: str, revision: int) -> Json:
        request = {
            "scope_id": scope_id,
            "artifact": {"family": family, "artifact_id": artifact_id, "revision": revision},
        }
        with wire.located(wire.artifact_path):
            found = self._app.get_artifact(parse_request(GetArtifact, request))
        return wire.artifact_revision_to_wire(scope_id, found)

    # Prepare ------------------------------------------------------------------------------------
    def prepare_context(self, body: Body, principal: Principal) -> Json:
        with wire.located(wire.in_body):
            prepared = self._app.prepare_context(parse_request(PrepareContext, body), principal)
        return wire.prepared_to_wire(prepared)
