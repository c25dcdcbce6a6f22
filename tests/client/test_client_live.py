"""The client against a real server (`live_server` from tests/conftest.py): full round trips."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import httpx
import pytest

from powercontext_api.models import MemoryEntry, PreparedContext
from powercontext_client import (
    ConflictError,
    InvalidRequestError,
    NotFoundError,
    PowerContextClient,
)


@pytest.fixture
def pc(live_server: str) -> Iterator[PowerContextClient]:
    with PowerContextClient(live_server) as client:
        yield client


def new_id(prefix: str) -> str:
    return f"{prefix}:{uuid.uuid4().hex[:12]}"


def test_create_remember_search_and_prepare_legacy_round_trip(
    pc: PowerContextClient, live_server: str
) -> None:
    team = pc.create_scope(new_id("team"), title="Platform")
    project = pc.create_scope(new_id("project"), title="Demo", context_references=[team.scope_id])
    assert project.context_references == [team.scope_id]
    assert project.version == 1

    own = pc.remember(project.scope_id, "After changing OpenAPI, run make api-generate and contract tests.")
    shared = pc.remember(team.scope_id, 'Release builds come from "main" only.', kind="decision")
    assert own.kind == "fact"  # omitted kind: the server default applies
    assert shared.kind == "decision"

    hits = pc.search_memory(project.scope_id, "OpenAPI contract").hits
    assert [h.citation for h in hits] == [own.citation]

    prepared = pc.prepare_context(project.scope_id, "OpenAPI contract release main")
    assert isinstance(prepared, PreparedContext)
    assert prepared.status == "ready"
    assert prepared.content is not None
    assert prepared.content_bytes == len(prepared.content.encode("utf-8")) <= 8000
    # The client hands back exactly what the server sent for the same request.
    raw = httpx.post(
        f"{live_server}/v1/context/prepare",
        json={"scope_id": project.scope_id, "query": "OpenAPI contract release main"},
    ).json()
    assert prepared.model_dump(mode="json", by_alias=True) == raw
    # Legacy envelope: both entries, cited exactly, the referenced one with its Scope.
    envelope = json.loads(prepared.content.split("\n")[4])
    assert [item["content"] for item in envelope["items"]] == [own.text, shared.text]
    assert envelope["items"][1]["citation"]["memory"]["scope_id"] == team.scope_id


def test_exact_read_returns_the_cited_version_after_a_revision(pc: PowerContextClient) -> None:
    scope = pc.create_scope(new_id("project"))
    first = pc.remember(scope.scope_id, "Version one of the note.")
    second = pc.revise_memory_entry(scope.scope_id, first.citation, "Version two of the note.")
    assert second.citation.entry_id == first.citation.entry_id
    assert second.citation.entry_version_id != first.citation.entry_version_id

    old = pc.get_memory_entry(scope.scope_id, first.citation.model_dump(mode="json"))
    assert isinstance(old, MemoryEntry)
    assert old.text == "Version one of the note."
    listed = pc.list_memory_entries(scope.scope_id)
    assert [e.text for e in listed.entries] == ["Version two of the note."]

    retired = pc.retire_memory_entry(scope.scope_id, second.citation)
    assert retired.state == "retired"
    assert pc.list_memory_entries(scope.scope_id).entries == []


def test_server_errors_surface_as_typed_exceptions_with_request_id(pc: PowerContextClient) -> None:
    with pytest.raises(NotFoundError) as missing:
        pc.get_scope(new_id("missing"))
    assert (missing.value.status, missing.value.code) == (404, "scope_not_found")
    assert missing.value.request_id

    scope = pc.create_scope(new_id("project"))
    pc.update_scope(scope.scope_id, expected_version=1, summary="changed")
    with pytest.raises(ConflictError) as stale:
        pc.update_scope(scope.scope_id, expected_version=1, summary="again")
    assert stale.value.code == "revision_conflict"

    with pytest.raises(ConflictError) as taken:
        pc.create_scope(scope.scope_id)
    assert taken.value.status == 409


def test_explicit_null_assembly_reaches_the_server_and_is_rejected(pc: PowerContextClient) -> None:
    scope = pc.create_scope(new_id("project"))
    with pytest.raises(InvalidRequestError) as rejected:
        pc.prepare_context(scope.scope_id, "anything", assembly=None)
    assert rejected.value.status == 422
    assert rejected.value.code == "invalid_request"
    assert rejected.value.details is not None
    assert "anything" not in json.dumps(rejected.value.details)


def test_health_capabilities_and_scope_listing(pc: PowerContextClient) -> None:
    assert pc.health_live().status == "ok"
    assert pc.health_ready().status == "ok"
    capabilities = pc.capabilities()
    assert capabilities.prepare.default_max_bytes == 8000
    assert capabilities.prepare.legacy is True

    created = {pc.create_scope(new_id("page")).scope_id for _ in range(3)}
    seen: set[str] = set()
    cursor: str | None = None
    while True:
        page = pc.list_scopes(limit=2, cursor=cursor)
        seen.update(s.scope_id for s in page.scopes)
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert created <= seen
