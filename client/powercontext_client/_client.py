"""`PowerContextClient`: one synchronous method per operation of `openapi/powercontext.yaml`."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any, Literal, TypeAlias, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel, ValidationError

from powercontext_api.models import (
    ArtifactRef,
    ArtifactRevision,
    Assembly,
    Candidate,
    CandidateDecisionRequest,
    CandidateGetRequest,
    CandidateList,
    Capabilities,
    EntryCitationRequest,
    ErrorResponse,
    Experience,
    ExperienceGetRequest,
    ExperienceRef,
    ExperienceSearchResult,
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
    ProposeExperienceRequest,
    ProposeProfileRequest,
    PutTopicRequest,
    RememberRequest,
    ReviseEntryRequest,
    ScopeCreateRequest,
    ScopeDescriptor,
    ScopeId,
    ScopeList,
    ScopeUpdateRequest,
    SearchRequest,
    Topic,
    TopicGetRequest,
    TopicRef,
    TopicSearchResult,
)

from ._errors import (
    REQUEST_ID_HEADER,
    PowerContextHTTPError,
    TransportError,
    UnexpectedResponseError,
    error_class_for,
)
from ._serialize import UNSET, _Unset, build, dump, dump_free, encode, parse

ModelT = TypeVar("ModelT", bound=BaseModel)

CitationArg: TypeAlias = MemoryCitation | Mapping[str, Any]
"""A Memory citation: the generated `MemoryCitation` model or a plain dict of the same shape."""

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

_USER_AGENT = "powercontext-client/0.1.0"


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
    (`pydantic.ValidationError`). Failures raise subclasses of `PowerContextError`.
    """

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        timeout: float = 10.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        headers = {"Accept": "application/json", "User-Agent": _USER_AGENT}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        self._http = httpx.Client(
            base_url=base_url,
            headers=headers,
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
        return self._call("GET", "/health/live", HealthStatus)

    def health_ready(self) -> HealthStatus:
        """`GET /health/ready`: the store answers (`UnavailableError` when it does not)."""
        return self._call("GET", "/health/ready", HealthStatus)

    def capabilities(self) -> Capabilities:
        """`GET /v1/capabilities`: API version, stored families and prepare limits."""
        return self._call("GET", "/v1/capabilities", Capabilities)

    # Scopes -------------------------------------------------------------------------------------
    def create_scope(
        self,
        scope_id: str,
        *,
        title: str | None = None,
        summary: str | None = None,
        context_references: Sequence[str] | None = None,
    ) -> ScopeDescriptor:
        """`POST /v1/scopes`. A taken `scope_id` raises `ConflictError`."""
        request = build(
            ScopeCreateRequest,
            scope_id=scope_id,
            title=title,
            summary=summary,
            context_references=_list_or_none(context_references),
        )
        return self._call("POST", "/v1/scopes", ScopeDescriptor, body=dump(request))

    def get_scope(self, scope_id: str) -> ScopeDescriptor:
        """`GET /v1/scopes/{scope_id}`."""
        return self._call("GET", _scope_path(scope_id), ScopeDescriptor)

    def list_scopes(self, limit: int | None = None, cursor: str | None = None) -> ScopeList:
        """`GET /v1/scopes`: one page in `scope_id` order; pass `next_cursor` for the next page."""
        params: dict[str, str | int] = {}
        if limit is not None:
            params["limit"] = limit
        if cursor is not None:
            params["cursor"] = cursor
        return self._call("GET", "/v1/scopes", ScopeList, params=params)

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
        request = build(
            ScopeUpdateRequest,
            expected_version=expected_version,
            title=title,
            summary=summary,
            context_references=_list_or_none(context_references),
        )
        return self._call("PUT", _scope_path(scope_id), ScopeDescriptor, body=dump(request))

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
        request = build(
            RememberRequest, scope_id=scope_id, text=text, kind=kind, expected_revision=expected_revision
        )
        return self._call("POST", "/v1/memory/remember", MemoryEntry, body=dump(request))

    def revise_memory_entry(self, scope_id: str, citation: CitationArg, text: str) -> MemoryEntry:
        """`POST /v1/memory/entries/revise`: replace the text of the entry a head citation names."""
        request = build(ReviseEntryRequest, scope_id=scope_id, citation=citation, text=text)
        return self._call("POST", "/v1/memory/entries/revise", MemoryEntry, body=dump(request))

    def retire_memory_entry(self, scope_id: str, citation: CitationArg) -> MemoryEntry:
        """`POST /v1/memory/entries/retire`: retire the entry a head citation names."""
        request = build(EntryCitationRequest, scope_id=scope_id, citation=citation)
        return self._call("POST", "/v1/memory/entries/retire", MemoryEntry, body=dump(request))

    def get_memory_entry(self, scope_id: str, citation: CitationArg) -> MemoryEntry:
        """`POST /v1/memory/entries/get`: exact read of the cited entry version, at any revision."""
        request = build(EntryCitationRequest, scope_id=scope_id, citation=citation)
        return self._call("POST", "/v1/memory/entries/get", MemoryEntry, body=dump(request))

    def list_memory_entries(
        self, scope_id: str, *, limit: int | None = None, cursor: str | None = None
    ) -> MemoryEntryList:
        """`POST /v1/memory/entries/list`: active entries of the Memory head, in creation order."""
        request = build(ListEntriesRequest, scope_id=scope_id, limit=limit, cursor=cursor)
        return self._call("POST", "/v1/memory/entries/list", MemoryEntryList, body=dump(request))

    def search_memory(self, scope_id: str, query: str, *, limit: int | None = None) -> MemorySearchResult:
        """`POST /v1/memory/search`: full-text search of the Memory head, best hit first."""
        request = build(MemorySearchRequest, scope_id=scope_id, query=query, limit=limit)
        return self._call("POST", "/v1/memory/search", MemorySearchResult, body=dump(request))

    # Exact reads --------------------------------------------------------------------------------
    def get_artifact_revision(
        self, scope_id: str, family: FamilyArg, artifact_id: str, revision: int
    ) -> ArtifactRevision:
        """`GET /v1/scopes/{scope_id}/artifacts/{family}/{artifact_id}/revisions/{revision}`.

        Exact read of any family's committed revision, old ones included; exactly one of the
        family fields (`memory`, `experience`, `profile`, `topic`) of the answer is set.
        """
        ref = build(ArtifactRef, family=family, artifact_id=artifact_id, revision=revision)
        path = (
            f"{_scope_path(scope_id)}/artifacts/{quote(ref.family.root, safe='')}"
            f"/{quote(ref.artifact_id.root, safe=':')}/revisions/{ref.revision}"
        )
        return self._call("GET", path, ArtifactRevision)

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
        request = build(
            ProposeExperienceRequest,
            scope_id=scope_id,
            situation=situation,
            action=action,
            outcome=outcome,
            lesson=lesson,
            artifact_id=artifact_id,
        )
        return self._call("POST", "/v1/experience/propose", Candidate, body=dump(request))

    def search_experience(
        self, scope_id: str, query: str, *, limit: int | None = None
    ) -> ExperienceSearchResult:
        """`POST /v1/experience/search`: approved Experience heads, in the order prepare uses."""
        request = build(SearchRequest, scope_id=scope_id, query=query, limit=limit)
        return self._call("POST", "/v1/experience/search", ExperienceSearchResult, body=dump(request))

    def get_experience(self, scope_id: str, artifact: ExperienceRefArg) -> Experience:
        """`POST /v1/experience/get`: exact read of one Experience revision."""
        request = build(ExperienceGetRequest, scope_id=scope_id, artifact=_ref(artifact))
        return self._call("POST", "/v1/experience/get", Experience, body=dump(request))

    # Profile ------------------------------------------------------------------------------------
    def propose_profile(self, scope_id: str, content: str) -> Candidate:
        """`POST /v1/profile/propose`: the next Profile snapshot (Markdown) as a pending Candidate."""
        request = build(ProposeProfileRequest, scope_id=scope_id, content=content)
        return self._call("POST", "/v1/profile/propose", Candidate, body=dump(request))

    # Candidates ---------------------------------------------------------------------------------
    def approve_candidate(self, scope_id: str, candidate_id: str, *, expected_version: int) -> Candidate:
        """`POST /v1/candidates/approve`: commits the next revision; a stale version is a 409."""
        request = build(
            CandidateDecisionRequest,
            scope_id=scope_id,
            candidate_id=candidate_id,
            expected_version=expected_version,
        )
        return self._call("POST", "/v1/candidates/approve", Candidate, body=dump(request))

    def reject_candidate(self, scope_id: str, candidate_id: str, *, expected_version: int) -> Candidate:
        """`POST /v1/candidates/reject`: nothing is committed; a stale version is a 409."""
        request = build(
            CandidateDecisionRequest,
            scope_id=scope_id,
            candidate_id=candidate_id,
            expected_version=expected_version,
        )
        return self._call("POST", "/v1/candidates/reject", Candidate, body=dump(request))

    def list_candidates(
        self,
        scope_id: str,
        *,
        state: CandidateState | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> CandidateList:
        """`POST /v1/candidates/list`: Candidates in proposal order, optionally of one `state`."""
        request = build(ListCandidatesRequest, scope_id=scope_id, state=state, limit=limit, cursor=cursor)
        return self._call("POST", "/v1/candidates/list", CandidateList, body=dump(request))

    def get_candidate(self, scope_id: str, candidate_id: str) -> Candidate:
        """`POST /v1/candidates/get`."""
        request = build(CandidateGetRequest, scope_id=scope_id, candidate_id=candidate_id)
        return self._call("POST", "/v1/candidates/get", Candidate, body=dump(request))

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
        request = build(
            PutTopicRequest,
            scope_id=scope_id,
            artifact_id=artifact_id,
            title=title,
            summary=summary,
            detail=detail,
            expected_revision=expected_revision,
        )
        return self._call("POST", "/v1/topic-memory/put", Topic, body=dump(request))

    def search_topics(self, scope_id: str, query: str, *, limit: int | None = None) -> TopicSearchResult:
        """`POST /v1/topic-memory/search`: topic heads of this Scope, in the order prepare uses."""
        request = build(SearchRequest, scope_id=scope_id, query=query, limit=limit)
        return self._call("POST", "/v1/topic-memory/search", TopicSearchResult, body=dump(request))

    def get_topic(self, scope_id: str, artifact: TopicRefArg) -> Topic:
        """`POST /v1/topic-memory/get`: exact read of one topic revision with its full detail."""
        request = build(TopicGetRequest, scope_id=scope_id, artifact=_ref(artifact))
        return self._call("POST", "/v1/topic-memory/get", Topic, body=dump(request))

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
        Inject `content` unchanged.
        """
        request = build(PrepareContextRequest, scope_id=scope_id, query=query, max_bytes=max_bytes)
        body = dump(request)
        # `assembly` is added beside the generated model rather than through it: an explicit `None`
        # must reach the server as `null`, which the generated model would refuse to hold.
        if assembly is not UNSET:
            body["assembly"] = dump_free(assembly)
        return self._call("POST", "/v1/context/prepare", PreparedContext, body=body)

    # Transport ----------------------------------------------------------------------------------
    def _call(
        self,
        method: str,
        path: str,
        response_model: type[ModelT],
        *,
        body: Mapping[str, Any] | None = None,
        params: Mapping[str, str | int] | None = None,
    ) -> ModelT:
        headers = {"Content-Type": "application/json"} if body is not None else None
        content = encode(body) if body is not None else None
        try:
            response = self._http.request(method, path, content=content, headers=headers, params=params)
        except httpx.RequestError as exc:
            raise TransportError(f"{method} {path} failed: {exc}") from exc
        request_id = response.headers.get(REQUEST_ID_HEADER)
        if not response.is_success:
            raise _http_error(response, request_id)
        try:
            return parse(response_model, response.content)
        except ValidationError as exc:
            raise UnexpectedResponseError(
                f"{method} {path}: HTTP {response.status_code} body is not a valid "
                f"{response_model.__name__}: {exc.error_count()} error(s)",
                status=response.status_code,
                request_id=request_id,
            ) from exc


def _scope_path(scope_id: str) -> str:
    # Validated like a body field, then percent-encoded so `/`, `?` or `#` cannot change the route.
    checked = ScopeId(scope_id).root
    return "/v1/scopes/" + quote(checked, safe=":@")


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
