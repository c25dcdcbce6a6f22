"""`PowerContextClient`: one synchronous method per operation of `openapi/powercontext.yaml`."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any

import httpx
from pydantic import BaseModel

from powercontext_api.models import (
    ArtifactRevision,
    Candidate,
    CandidateList,
    Capabilities,
    EntryErasure,
    Experience,
    ExperienceSearchResult,
    HealthStatus,
    MemoryEntry,
    MemoryEntryList,
    MemorySearchResult,
    PreparedContext,
    PreparedContextExplanation,
    RememberBatchResult,
    ScopeDescriptor,
    ScopeErasure,
    ScopeImport,
    ScopeList,
    Topic,
    TopicSearchResult,
)
from powercontext_api.operations import Operation

from . import _operations as ops
from . import _transfer as transfer
from ._errors import ConflictError
from ._operations import (
    AssemblyArg,
    BatchEntryArg,
    CandidateState,
    CitationArg,
    ExperienceRefArg,
    FamilyArg,
    ModelT,
    TopicRefArg,
)
from ._retry import DEFAULT_BACKOFF, DEFAULT_MAX_DELAY, DEFAULT_RETRIES, Attempts, RetryPolicy
from ._serialize import UNSET, _Unset
from ._transfer import Sink, Source


class PowerContextClient:
    """A synchronous PowerContext API client.

    ```python
    with PowerContextClient("http://127.0.0.1:8000", token="...") as pc:
        pc.create_scope("project:demo", title="Demo")
        pc.remember("project:demo", "Run make contract-test after changing the API.")
        prepared = pc.prepare_context("project:demo", "how do I validate an API change?")
    ```

    Every method returns the generated response model of its operation. Arguments set to `None`
    (the default) are left out of the request, so the server applies its own defaults. Arguments
    are validated against the generated request models before anything is sent
    (`InvalidArgumentError`). Failures raise subclasses of `PowerContextError`.

    Reads (prepare included), `update_scope`, `delete_scope` and `create_scope(exist_ok=True)` are
    sent again after a failed connection or a 503, up to `retries` times, waiting `backoff` seconds
    and then twice as long each time, or what the 503's `Retry-After` says, at most
    `max_retry_delay`. Other writes are sent once. `retries=0` turns retrying off.
    `AsyncPowerContextClient` has the same methods as coroutines and sends the same bytes.
    """

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        timeout: float = 10.0,
        transport: httpx.BaseTransport | None = None,
        retries: int = DEFAULT_RETRIES,
        backoff: float = DEFAULT_BACKOFF,
        max_retry_delay: float = DEFAULT_MAX_DELAY,
    ) -> None:
        self._retry = RetryPolicy(retries, backoff, max_retry_delay)
        self._http = httpx.Client(
            base_url=base_url,
            headers=ops.client_headers(token),
            timeout=httpx.Timeout(timeout),
            transport=transport,
            follow_redirects=False,
        )

    # Lifecycle ----------------------------------------------------------------------------------
    def close(self) -> None:
        """Close the connection pool. The client cannot be used afterwards."""
        self._http.close()

    def __enter__(self) -> PowerContextClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        # Never show the token.
        return f"PowerContextClient(base_url={str(self._http.base_url)!r})"

    # Service ------------------------------------------------------------------------------------
    def health_live(self) -> HealthStatus:
        """`GET /health/live`: the process is up."""
        return self._send(ops.health_live())

    def health_ready(self) -> HealthStatus:
        """`GET /health/ready`: the store answers (`UnavailableError` when it does not)."""
        return self._send(ops.health_ready())

    def capabilities(self) -> Capabilities:
        """`GET /v1/capabilities`: API version, stored families and prepare limits."""
        return self._send(ops.capabilities())

    # Scopes -------------------------------------------------------------------------------------
    def create_scope(
        self,
        scope_id: str,
        *,
        title: str | None = None,
        summary: str | None = None,
        context_references: Sequence[str] | None = None,
        exist_ok: bool = False,
    ) -> ScopeDescriptor:
        """`POST /v1/scopes`. A taken `scope_id` raises `ConflictError`, unless `exist_ok`: then the
        existing Scope is returned as it is (its title, summary and references are not changed)."""
        call = ops.create_scope(scope_id, title, summary, context_references, exist_ok)
        try:
            return self._send(call)
        except ConflictError as exc:
            if not (exist_ok and ops.scope_taken(exc)):
                raise
        return self.get_scope(scope_id)

    def delete_scope(self, scope_id: str) -> ScopeErasure:
        """`DELETE /v1/scopes/{scope_id}`: erase the Scope and all it holds (needs `scope.erase`);
        a Scope another Scope references is a 409 `scope_referenced`."""
        return self._send(ops.delete_scope(scope_id))

    def get_scope(self, scope_id: str) -> ScopeDescriptor:
        """`GET /v1/scopes/{scope_id}`."""
        return self._send(ops.get_scope(scope_id))

    def list_scopes(self, limit: int | None = None, cursor: str | None = None) -> ScopeList:
        """`GET /v1/scopes`: one page in `scope_id` order; pass `next_cursor` for the next page."""
        return self._send(ops.list_scopes(limit, cursor))

    def update_scope(
        self,
        scope_id: str,
        *,
        expected_version: int,
        title: str | None = None,
        summary: str | None = None,
        context_references: Sequence[str] | None = None,
    ) -> ScopeDescriptor:
        """`PUT /v1/scopes/{scope_id}`. Omitted fields keep their value; a stale version is a 409."""
        return self._send(ops.update_scope(scope_id, expected_version, title, summary, context_references))

    # Memory -------------------------------------------------------------------------------------
    def remember(
        self,
        scope_id: str,
        text: str,
        *,
        kind: str | None = None,
        expected_revision: int | None = None,
    ) -> MemoryEntry:
        """`POST /v1/memory/remember`: add an entry; returns it with its exact citation."""
        return self._send(ops.remember(scope_id, text, kind, expected_revision))

    def remember_batch(
        self,
        scope_id: str,
        entries: Sequence[BatchEntryArg],
        *,
        kind: str | None = None,
        expected_revision: int | None = None,
    ) -> RememberBatchResult:
        """`POST /v1/memory/remember/batch`: add up to 1,000 entries in one transaction; returns
        one exact citation per entry, in order. One invalid entry stores nothing (422 naming it)."""
        return self._send(ops.remember_batch(scope_id, entries, kind, expected_revision))

    def revise_memory_entry(self, scope_id: str, citation: CitationArg, text: str) -> MemoryEntry:
        """`POST /v1/memory/entries/revise`: replace the text of the entry a head citation names."""
        return self._send(ops.revise_memory_entry(scope_id, citation, text))

    def erase_memory_entry(self, scope_id: str, entry_id: str) -> EntryErasure:
        """`POST /v1/memory/entries/erase`: delete every version of an entry (needs `scope.erase`);
        its citations then read as 410 `entry_erased`."""
        return self._send(ops.erase_memory_entry(scope_id, entry_id))

    def retire_memory_entry(self, scope_id: str, citation: CitationArg) -> MemoryEntry:
        """`POST /v1/memory/entries/retire`: retire the entry a head citation names."""
        return self._send(ops.retire_memory_entry(scope_id, citation))

    def get_memory_entry(self, scope_id: str, citation: CitationArg) -> MemoryEntry:
        """`POST /v1/memory/entries/get`: exact read of the cited entry version, at any revision."""
        return self._send(ops.get_memory_entry(scope_id, citation))

    def list_memory_entries(
        self, scope_id: str, *, limit: int | None = None, cursor: str | None = None
    ) -> MemoryEntryList:
        """`POST /v1/memory/entries/list`: active entries of the Memory head, in creation order."""
        return self._send(ops.list_memory_entries(scope_id, limit, cursor))

    def search_memory(self, scope_id: str, query: str, *, limit: int | None = None) -> MemorySearchResult:
        """`POST /v1/memory/search`: full-text search of the Memory head, best hit first."""
        return self._send(ops.search_memory(scope_id, query, limit))

    # Exact reads --------------------------------------------------------------------------------
    def get_artifact_revision(
        self, scope_id: str, family: FamilyArg, artifact_id: str, revision: int
    ) -> ArtifactRevision:
        """`GET /v1/scopes/{scope_id}/artifacts/{family}/{artifact_id}/revisions/{revision}`.

        Exact read of any family's committed revision, old ones included; exactly one of the
        family fields (`memory`, `experience`, `profile`, `topic`) of the answer is set.
        """
        return self._send(ops.get_artifact_revision(scope_id, family, artifact_id, revision))

    # Experience ---------------------------------------------------------------------------------
    def propose_experience(
        self,
        scope_id: str,
        *,
        situation: str,
        action: str,
        outcome: str,
        lesson: str,
        artifact_id: str | None = None,
    ) -> Candidate:
        """`POST /v1/experience/propose`: a pending Candidate; pass `artifact_id` to revise one."""
        return self._send(ops.propose_experience(scope_id, situation, action, outcome, lesson, artifact_id))

    def search_experience(
        self, scope_id: str, query: str, *, limit: int | None = None
    ) -> ExperienceSearchResult:
        """`POST /v1/experience/search`: approved Experience heads, in the order prepare uses."""
        return self._send(ops.search_experience(scope_id, query, limit))

    def get_experience(self, scope_id: str, artifact: ExperienceRefArg) -> Experience:
        """`POST /v1/experience/get`: exact read of one Experience revision."""
        return self._send(ops.get_experience(scope_id, artifact))

    # Profile ------------------------------------------------------------------------------------
    def propose_profile(self, scope_id: str, content: str) -> Candidate:
        """`POST /v1/profile/propose`: the next Profile snapshot (Markdown) as a pending Candidate."""
        return self._send(ops.propose_profile(scope_id, content))

    # Candidates ---------------------------------------------------------------------------------
    def approve_candidate(self, scope_id: str, candidate_id: str, *, expected_version: int) -> Candidate:
        """`POST /v1/candidates/approve`: commits the next revision; a stale version is a 409."""
        return self._send(ops.decide_candidate("approve", scope_id, candidate_id, expected_version))

    def reject_candidate(self, scope_id: str, candidate_id: str, *, expected_version: int) -> Candidate:
        """`POST /v1/candidates/reject`: nothing is committed; a stale version is a 409."""
        return self._send(ops.decide_candidate("reject", scope_id, candidate_id, expected_version))

    def list_candidates(
        self,
        scope_id: str,
        *,
        state: CandidateState | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> CandidateList:
        """`POST /v1/candidates/list`: Candidates in proposal order, optionally of one `state`."""
        return self._send(ops.list_candidates(scope_id, state, limit, cursor))

    def get_candidate(self, scope_id: str, candidate_id: str) -> Candidate:
        """`POST /v1/candidates/get`."""
        return self._send(ops.get_candidate(scope_id, candidate_id))

    # Topic Memory -------------------------------------------------------------------------------
    def put_topic(
        self,
        scope_id: str,
        *,
        title: str,
        summary: str,
        artifact_id: str | None = None,
        detail: str | None = None,
        expected_revision: int | None = None,
    ) -> Topic:
        """`POST /v1/topic-memory/put`: create a topic, or commit the next revision of `artifact_id`."""
        return self._send(ops.put_topic(scope_id, title, summary, artifact_id, detail, expected_revision))

    def search_topics(self, scope_id: str, query: str, *, limit: int | None = None) -> TopicSearchResult:
        """`POST /v1/topic-memory/search`: topic heads of this Scope, in the order prepare uses."""
        return self._send(ops.search_topics(scope_id, query, limit))

    def get_topic(self, scope_id: str, artifact: TopicRefArg) -> Topic:
        """`POST /v1/topic-memory/get`: exact read of one topic revision with its full detail."""
        return self._send(ops.get_topic(scope_id, artifact))

    # Context ------------------------------------------------------------------------------------
    def prepare_context(
        self,
        scope_id: str,
        query: str,
        *,
        max_bytes: int | None = None,
        assembly: AssemblyArg | _Unset = UNSET,
    ) -> PreparedContext:
        """`POST /v1/context/prepare`: one cited, byte-budgeted context string.

        `max_bytes` is left out unless given (the server default is 8000). `assembly` is left out
        of the JSON unless passed, which asks for the legacy output; when passed it is sent as given,
        so `{}` asks for the text defaults, `{"sections": []}` for an empty result, and `None` is
        sent as JSON `null`, which the server rejects with `InvalidRequestError`. A generated
        `Assembly` model is dumped by alias with only the fields that were set: `Assembly()` is `{}`.
        Check the answer with `validate_prepared_context`, then inject `content` unchanged.
        """
        return self._send(ops.prepare_context(scope_id, query, max_bytes, assembly))

    def explain_prepare_context(
        self,
        scope_id: str,
        query: str,
        *,
        max_bytes: int | None = None,
        assembly: AssemblyArg | _Unset = UNSET,
    ) -> PreparedContextExplanation:
        """`POST /v1/context/prepare/explain`: prepare's answer for the same arguments, with a
        receipt: every recalled candidate, whether the text includes it, and if not, why."""
        return self._send(ops.explain_prepare_context(scope_id, query, max_bytes, assembly))

    # Moving a Scope -----------------------------------------------------------------------------
    def export_scope(self, scope_id: str, out: Sink) -> int:
        """`GET /v1/scopes/{scope_id}/export` (needs `scope.export`): write the Scope's export, the
        JSON Lines `powercontext export` writes, to `out` (a binary file, or a callable given each
        chunk) as it arrives; the number of bytes written. Sent once. An answer the server could
        not finish raises `TransportError`: whatever `out` holds then is incomplete."""
        call, write = transfer.export_call(scope_id), transfer.Writer(out)
        try:
            with self._http.stream(call.method, call.path, headers=transfer.EXPORT_HEADERS) as response:
                transfer.raise_unless_success(call, response, response.read)
                for chunk in response.iter_bytes():
                    write(chunk)
        except httpx.RequestError as exc:
            raise call.transport_error(exc) from exc
        return write.written

    def import_scope(self, source: Source, *, scope_id: str | None = None) -> ScopeImport:
        """`POST /v1/scopes/{scope_id}/import` (needs `server.admin`): recreate the Scope an export
        holds (its bytes, a binary file or an iterable of chunks, sent as it is read) under
        `scope_id`, by default the id it was exported under, in one transaction. Sent once, and
        waits for the answer as long as the import takes. A refused stream is a 422
        `invalid_export` (`InvalidRequestError`), a taken id a 409 `scope_exists`."""
        call, body, arguments = transfer.import_request(scope_id, source, self._http.timeout)
        try:
            response = self._http.request(content=body, **arguments)
        except httpx.RequestError as exc:
            raise call.transport_error(exc) from exc
        return ops.read_response(call, response)

    # Any operation ------------------------------------------------------------------------------
    def call(
        self,
        operation: Operation[ModelT],
        body: BaseModel | Mapping[str, Any] | None = None,
        *,
        path: Mapping[str, str | int] | None = None,
        query: Mapping[str, str | int] | None = None,
    ) -> ModelT:
        """Any operation of the contract by its entry in `powercontext_api.operations`, e.g.
        `pc.call(operations.GET_PROFILE, {"scope_id": "project:demo"})`: the body (a generated model
        or a mapping) and the path and query parameters are validated by the operation's generated
        models, and the answer is its generated response model. The named methods are shortcuts."""
        return self._send(ops.any_operation(operation, body, path, query))

    # Transport ----------------------------------------------------------------------------------
    def _send(self, call: ops.Call[ModelT]) -> ModelT:
        attempts = Attempts(self._retry, call)
        while True:
            try:
                response = self._http.request(
                    call.method, call.path, content=call.content, headers=call.headers, params=call.params
                )
            except httpx.RequestError as exc:
                delay = attempts.after_error(exc)
                if delay is None:
                    raise call.transport_error(exc) from exc
            else:
                delay = attempts.after_response(response)
                if delay is None:
                    return ops.read_response(call, response)
            time.sleep(delay)
