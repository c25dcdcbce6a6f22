"""One builder per operation, shared by the sync and the async client.

A builder validates its arguments against the generated request model and returns a `Call`: the
method, path, JSON body, query parameters and response model of one request. The clients only send
it (`httpx.Client` or `httpx.AsyncClient`) and hand the answer to `read_response`, so both put the
same bytes on the wire and raise the same errors.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeAlias, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel, ValidationError

from powercontext_api import operations as ops
from powercontext_api.models import (
    ArtifactRef,
    ArtifactRevision,
    Assembly,
    BatchEntry,
    Candidate,
    CandidateDecisionRequest,
    CandidateGetRequest,
    CandidateList,
    Capabilities,
    EntryCitationRequest,
    EntryEraseRequest,
    EntryErasure,
    ErrorResponse,
    Experience,
    ExperienceGetRequest,
    ExperienceRef,
    ExperienceSearchResult,
    GetScopeParameters,
    HealthStatus,
    ListCandidatesRequest,
    ListEntriesRequest,
    MemoryCitation,
    MemoryEntry,
    MemoryEntryList,
    MemorySearchRequest,
    MemorySearchResult,
    PrepareContextRequest,
    PreparedContext,
    PreparedContextExplanation,
    ProposeExperienceRequest,
    ProposeProfileRequest,
    PutTopicRequest,
    RememberBatchRequest,
    RememberBatchResult,
    RememberRequest,
    ReviseEntryRequest,
    ScopeCreateRequest,
    ScopeDescriptor,
    ScopeErasure,
    ScopeList,
    ScopeUpdateRequest,
    SearchRequest,
    Topic,
    TopicGetRequest,
    TopicRef,
    TopicSearchResult,
)
from powercontext_api.operations import Operation

from ._errors import (
    REQUEST_ID_HEADER,
    ConflictError,
    PowerContextHTTPError,
    TransportError,
    UnexpectedResponseError,
    error_class_for,
)
from ._serialize import UNSET, _Unset, build, dump, dump_free, encode, parse, validate
from ._version import VERSION

ModelT = TypeVar("ModelT", bound=BaseModel)

CitationArg: TypeAlias = MemoryCitation | Mapping[str, Any]
"""A Memory citation: the generated `MemoryCitation` model or a plain dict of the same shape."""

BatchEntryArg: TypeAlias = str | BatchEntry | Mapping[str, Any]
"""One entry of a batch: its text alone (the batch's `kind`, else the server's default), the
generated `BatchEntry`, or a plain dict `{"text": ..., "kind": ...}`."""

AssemblyArg: TypeAlias = Assembly | Mapping[str, Any] | None
"""The `assembly` object of a prepare request: the generated `Assembly` model (dumped by alias,
only the fields that were set, so `Assembly()` is `{}`) or a plain dict, sent as given."""

ExperienceRefArg: TypeAlias = ExperienceRef | ArtifactRef | Mapping[str, Any]
"""An exact Experience revision: `ExperienceRef`, an `ArtifactRef` such as `hit.artifact` or
`candidate.committed`, or a plain dict `{"family": "experience", "artifact_id": ..., "revision": ...}`."""

TopicRefArg: TypeAlias = TopicRef | ArtifactRef | Mapping[str, Any]
"""An exact topic revision: `TopicRef`, an `ArtifactRef` such as `topic.artifact`, or a plain dict
`{"family": "topic-memory", "artifact_id": ..., "revision": ...}`."""

FamilyArg: TypeAlias = Literal["memory", "experience", "profile", "topic-memory"]
"""An Artifact family as the wire spells it."""

CandidateState: TypeAlias = Literal["pending", "approved", "rejected"]

SCOPE_EXISTS = "scope_exists"  # the error code of a create_scope whose id is taken

USER_AGENT = f"powercontext-client/{VERSION}"


def path_segment(value: str) -> str:
    """`value` as one path segment that every HTTP client sends as it is.

    `/`, `?` or `#` in a value cannot change the route; `:` and `@` are path-safe. A value that is
    exactly `.` or `..` (a valid Scope id) is a dot segment, which clients remove from a path before
    sending it (httpx among them, as RFC 3986 says), so it goes as `%2E` / `%2E%2E`, which is not
    one and which the server decodes back.
    """
    encoded = quote(value, safe=":@")
    return encoded.replace(".", "%2E") if encoded in (".", "..") else encoded


@dataclass(frozen=True)
class Call(Generic[ModelT]):
    """One request, ready to send: an operation of the generated table, its path parameters
    (percent-encoded into the path template), its query parameters and its JSON body.
    `repeatable` marks a write that is safe to send again (see `_retry`)."""

    operation: Operation[ModelT]
    body: Mapping[str, Any] | None = None
    params: Mapping[str, str | int] | None = None
    path_params: Mapping[str, str | int] = field(default_factory=dict)
    repeatable: bool = False

    @property
    def method(self) -> str:
        return self.operation.method

    @property
    def path(self) -> str:
        return self.operation.path.format(
            **{name: path_segment(str(value)) for name, value in self.path_params.items()}
        )

    @property
    def response_model(self) -> type[ModelT]:
        return self.operation.response_model

    @property
    def content(self) -> bytes | None:
        return encode(self.body) if self.body is not None else None

    @property
    def headers(self) -> dict[str, str] | None:
        return {"Content-Type": "application/json"} if self.body is not None else None

    def transport_error(self, exc: httpx.RequestError) -> TransportError:
        return TransportError(f"{self.method} {self.path} failed: {exc}")


def client_headers(token: str | None) -> dict[str, str]:
    headers = {"Accept": "application/json", "User-Agent": USER_AGENT}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return headers


def read_response(call: Call[ModelT], response: httpx.Response) -> ModelT:
    """The answer's model, or the exception its status or body calls for. `response` must be read."""
    request_id = response.headers.get(REQUEST_ID_HEADER)
    if not response.is_success:
        raise _http_error(response, request_id)
    try:
        return parse(call.response_model, response.content)
    except ValidationError as exc:
        raise UnexpectedResponseError(
            f"{call.method} {call.path}: HTTP {response.status_code} body is not a valid "
            f"{call.response_model.__name__}: {exc.error_count()} error(s)",
            status=response.status_code,
            request_id=request_id,
        ) from exc


# Any operation -------------------------------------------------------------------------------------
def any_operation(
    operation: Operation[ModelT],
    body: BaseModel | Mapping[str, Any] | None,
    path: Mapping[str, str | int] | None,
    query: Mapping[str, str | int] | None,
) -> Call[ModelT]:
    """A call of any operation of the generated table, checked by its generated models first."""
    path_params: dict[str, str | int] = dict(path or {})
    if operation.parameters_model is not None:
        validate(operation.parameters_model, {**(query or {}), **path_params})
    payload: dict[str, Any] | None = None
    if operation.body_model is not None:
        given = dump(body) if isinstance(body, BaseModel) else dict(body or {})
        payload = dump(validate(operation.body_model, given))
    return Call(operation, body=payload, params=dict(query) if query else None, path_params=path_params)


# Service ------------------------------------------------------------------------------------------
def health_live() -> Call[HealthStatus]:
    return Call(ops.HEALTH_LIVE)


def health_ready() -> Call[HealthStatus]:
    return Call(ops.HEALTH_READY)


def capabilities() -> Call[Capabilities]:
    return Call(ops.GET_CAPABILITIES)


# Scopes -------------------------------------------------------------------------------------------
def create_scope(
    scope_id: str,
    title: str | None,
    summary: str | None,
    context_references: Sequence[str] | None,
    exist_ok: bool = False,
) -> Call[ScopeDescriptor]:
    request = build(
        ScopeCreateRequest,
        scope_id=scope_id,
        title=title,
        summary=summary,
        context_references=_list_or_none(context_references),
    )
    # With exist_ok a repeat is harmless: its 409 is answered by reading the Scope.
    return Call(ops.CREATE_SCOPE, body=dump(request), repeatable=exist_ok)


def scope_taken(exc: ConflictError) -> bool:
    """Whether a create_scope 409 says the id is taken (what `exist_ok` forgives)."""
    return exc.code == SCOPE_EXISTS


def get_scope(scope_id: str) -> Call[ScopeDescriptor]:
    return Call(ops.GET_SCOPE, path_params={"scope_id": _scope_id(scope_id)})


def delete_scope(scope_id: str) -> Call[ScopeErasure]:
    return Call(ops.DELETE_SCOPE, path_params={"scope_id": _scope_id(scope_id)})


def list_scopes(limit: int | None, cursor: str | None) -> Call[ScopeList]:
    params: dict[str, str | int] = {}
    if limit is not None:
        params["limit"] = limit
    if cursor is not None:
        params["cursor"] = cursor
    return Call(ops.LIST_SCOPES, params=params)


def update_scope(
    scope_id: str,
    expected_version: int,
    title: str | None,
    summary: str | None,
    context_references: Sequence[str] | None,
) -> Call[ScopeDescriptor]:
    request = build(
        ScopeUpdateRequest,
        expected_version=expected_version,
        title=title,
        summary=summary,
        context_references=_list_or_none(context_references),
    )
    return Call(ops.UPDATE_SCOPE, body=dump(request), path_params={"scope_id": _scope_id(scope_id)})


# Memory -------------------------------------------------------------------------------------------
def remember(scope_id: str, text: str, kind: str | None, expected_revision: int | None) -> Call[MemoryEntry]:
    request = build(
        RememberRequest, scope_id=scope_id, text=text, kind=kind, expected_revision=expected_revision
    )
    return Call(ops.REMEMBER, body=dump(request))


def remember_batch(
    scope_id: str, entries: Sequence[BatchEntryArg], kind: str | None, expected_revision: int | None
) -> Call[RememberBatchResult]:
    request = build(
        RememberBatchRequest,
        scope_id=scope_id,
        entries=[_batch_entry(entry, kind) for entry in entries],
        expected_revision=expected_revision,
    )
    return Call(ops.REMEMBER_BATCH, body=dump(request))


def _batch_entry(entry: BatchEntryArg, kind: str | None) -> Any:
    if isinstance(entry, str):
        return {"text": entry} if kind is None else {"text": entry, "kind": kind}
    return entry


def revise_memory_entry(scope_id: str, citation: CitationArg, text: str) -> Call[MemoryEntry]:
    request = build(ReviseEntryRequest, scope_id=scope_id, citation=citation, text=text)
    return Call(ops.REVISE_MEMORY_ENTRY, body=dump(request))


def retire_memory_entry(scope_id: str, citation: CitationArg) -> Call[MemoryEntry]:
    request = build(EntryCitationRequest, scope_id=scope_id, citation=citation)
    return Call(ops.RETIRE_MEMORY_ENTRY, body=dump(request))


def erase_memory_entry(scope_id: str, entry_id: str) -> Call[EntryErasure]:
    request = build(EntryEraseRequest, scope_id=scope_id, entry_id=entry_id)
    return Call(ops.ERASE_MEMORY_ENTRY, body=dump(request))


def get_memory_entry(scope_id: str, citation: CitationArg) -> Call[MemoryEntry]:
    request = build(EntryCitationRequest, scope_id=scope_id, citation=citation)
    return Call(ops.GET_MEMORY_ENTRY, body=dump(request))


def list_memory_entries(scope_id: str, limit: int | None, cursor: str | None) -> Call[MemoryEntryList]:
    request = build(ListEntriesRequest, scope_id=scope_id, limit=limit, cursor=cursor)
    return Call(ops.LIST_MEMORY_ENTRIES, body=dump(request))


def search_memory(scope_id: str, query: str, limit: int | None) -> Call[MemorySearchResult]:
    request = build(MemorySearchRequest, scope_id=scope_id, query=query, limit=limit)
    return Call(ops.SEARCH_MEMORY, body=dump(request))


# Exact reads --------------------------------------------------------------------------------------
def get_artifact_revision(
    scope_id: str, family: FamilyArg, artifact_id: str, revision: int
) -> Call[ArtifactRevision]:
    ref = build(ArtifactRef, family=family, artifact_id=artifact_id, revision=revision)
    return Call(
        ops.GET_ARTIFACT_REVISION,
        path_params={
            "scope_id": _scope_id(scope_id),
            "family": ref.family,
            "artifact_id": ref.artifact_id,
            "revision": ref.revision,
        },
    )


# Experience ---------------------------------------------------------------------------------------
def propose_experience(
    scope_id: str, situation: str, action: str, outcome: str, lesson: str, artifact_id: str | None
) -> Call[Candidate]:
    request = build(
        ProposeExperienceRequest,
        scope_id=scope_id,
        situation=situation,
        action=action,
        outcome=outcome,
        lesson=lesson,
        artifact_id=artifact_id,
    )
    return Call(ops.PROPOSE_EXPERIENCE, body=dump(request))


def search_experience(scope_id: str, query: str, limit: int | None) -> Call[ExperienceSearchResult]:
    request = build(SearchRequest, scope_id=scope_id, query=query, limit=limit)
    return Call(ops.SEARCH_EXPERIENCE, body=dump(request))


def get_experience(scope_id: str, artifact: ExperienceRefArg) -> Call[Experience]:
    request = build(ExperienceGetRequest, scope_id=scope_id, artifact=_ref(artifact))
    return Call(ops.GET_EXPERIENCE, body=dump(request))


# Profile ------------------------------------------------------------------------------------------
def propose_profile(scope_id: str, content: str) -> Call[Candidate]:
    request = build(ProposeProfileRequest, scope_id=scope_id, content=content)
    return Call(ops.PROPOSE_PROFILE, body=dump(request))


# Candidates ---------------------------------------------------------------------------------------
def decide_candidate(
    decision: Literal["approve", "reject"], scope_id: str, candidate_id: str, expected_version: int
) -> Call[Candidate]:
    request = build(
        CandidateDecisionRequest,
        scope_id=scope_id,
        candidate_id=candidate_id,
        expected_version=expected_version,
    )
    operation = ops.APPROVE_CANDIDATE if decision == "approve" else ops.REJECT_CANDIDATE
    return Call(operation, body=dump(request))


def list_candidates(
    scope_id: str, state: CandidateState | None, limit: int | None, cursor: str | None
) -> Call[CandidateList]:
    request = build(ListCandidatesRequest, scope_id=scope_id, state=state, limit=limit, cursor=cursor)
    return Call(ops.LIST_CANDIDATES, body=dump(request))


def get_candidate(scope_id: str, candidate_id: str) -> Call[Candidate]:
    request = build(CandidateGetRequest, scope_id=scope_id, candidate_id=candidate_id)
    return Call(ops.GET_CANDIDATE, body=dump(request))


# Topic Memory -------------------------------------------------------------------------------------
def put_topic(
    scope_id: str,
    title: str,
    summary: str,
    artifact_id: str | None,
    detail: str | None,
    expected_revision: int | None,
) -> Call[Topic]:
    request = build(
        PutTopicRequest,
        scope_id=scope_id,
        artifact_id=artifact_id,
        title=title,
        summary=summary,
        detail=detail,
        expected_revision=expected_revision,
    )
    return Call(ops.PUT_TOPIC, body=dump(request))


def search_topics(scope_id: str, query: str, limit: int | None) -> Call[TopicSearchResult]:
    request = build(SearchRequest, scope_id=scope_id, query=query, limit=limit)
    return Call(ops.SEARCH_TOPICS, body=dump(request))


def get_topic(scope_id: str, artifact: TopicRefArg) -> Call[Topic]:
    request = build(TopicGetRequest, scope_id=scope_id, artifact=_ref(artifact))
    return Call(ops.GET_TOPIC, body=dump(request))


# Context ------------------------------------------------------------------------------------------
def prepare_context(
    scope_id: str, query: str, max_bytes: int | None, assembly: AssemblyArg | _Unset
) -> Call[PreparedContext]:
    request = build(PrepareContextRequest, scope_id=scope_id, query=query, max_bytes=max_bytes)
    body = dump(request)
    # `assembly` is added beside the generated model rather than through it: an explicit `None`
    # must reach the server as `null`, which the generated model would refuse to hold.
    if assembly is not UNSET:
        body["assembly"] = dump_free(assembly)
    return Call(ops.PREPARE_CONTEXT, body=body)


def explain_prepare_context(
    scope_id: str, query: str, max_bytes: int | None, assembly: AssemblyArg | _Unset
) -> Call[PreparedContextExplanation]:
    # Same body as prepare, by construction.
    body = prepare_context(scope_id, query, max_bytes, assembly).body
    return Call(ops.EXPLAIN_PREPARE_CONTEXT, body=body)


# Helpers ------------------------------------------------------------------------------------------
def _scope_id(scope_id: str) -> str:
    """A Scope id for a path, validated like a body field before it is percent-encoded."""
    return validate(GetScopeParameters, {"scope_id": scope_id}).scope_id


def _ref(value: BaseModel | Mapping[str, Any]) -> Mapping[str, Any]:
    # A model (an `ArtifactRef` from a response, say) is re-validated from its wire form, so any
    # model of the right shape works, not only the request's own class.
    return dump(value) if isinstance(value, BaseModel) else value


def _list_or_none(values: Sequence[str] | None) -> list[str] | None:
    return None if values is None else list(values)


def _http_error(response: httpx.Response, request_id: str | None) -> PowerContextHTTPError:
    status = response.status_code
    code: str | None = None
    message = response.reason_phrase or f"HTTP {status}"
    details: dict[str, Any] | None = None
    try:
        error = parse(ErrorResponse, response.content).error
    except ValidationError:
        # Not the contract's error body; keep whatever is recognisable.
        loose = _loose_error(response.content)
        if loose is not None:
            code, message, details = loose
    else:
        code, message, details = error.code, error.message, error.details
    return error_class_for(status)(
        status=status, code=code, message=message, details=details, request_id=request_id
    )


def _loose_error(content: bytes) -> tuple[str | None, str, dict[str, Any] | None] | None:
    try:
        data = json.loads(content)
    except ValueError:
        return None
    error = data.get("error") if isinstance(data, dict) else None
    if not isinstance(error, dict) or not isinstance(error.get("message"), str):
        return None
    code = error.get("code")
    details = error.get("details")
    return (
        code if isinstance(code, str) else None,
        error["message"],
        details if isinstance(details, dict) else None,
    )
