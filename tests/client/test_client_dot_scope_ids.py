"""Scope ids `.` and `..` through the Python client (issue 37, item 7).

Both are valid Scope ids, and the server serves them, but httpx removes dot segments from a path
(RFC 3986), so `GET /v1/scopes/..` went out as `GET /v1` and `/v1/scopes/.` as `/v1/scopes`: the
client read or changed another resource. The client now sends such a segment as `%2E`, which is
not a dot segment and which the server decodes back.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from powercontext_client import AsyncPowerContextClient, NotFoundError, PowerContextClient
from powercontext_client._operations import path_segment

from ..conftest import LiveServer

DOT_IDS = (".", "..")


@pytest.mark.parametrize(
    ("value", "segment"),
    [(".", "%2E"), ("..", "%2E%2E"), ("...", "..."), (".a", ".a"), ("a/..", "a%2F.."), ("p:x@y", "p:x@y")],
)
def test_only_a_whole_dot_segment_is_encoded(value: str, segment: str) -> None:
    assert path_segment(value) == segment


@pytest.fixture
def server(start_server: Callable[..., LiveServer]) -> LiveServer:
    return start_server()


@pytest.mark.parametrize("scope_id", DOT_IDS)
def test_a_dot_scope_is_created_read_updated_used_and_deleted(server: LiveServer, scope_id: str) -> None:
    with PowerContextClient(server.base_url) as pc:
        pc.create_scope("neighbour", title="the Scope next door")
        assert pc.create_scope(scope_id, title="dots").scope_id == scope_id
        read = pc.get_scope(scope_id)
        assert (read.scope_id, read.title) == (scope_id, "dots")
        updated = pc.update_scope(scope_id, expected_version=1, title="still dots")
        assert (updated.scope_id, updated.title, updated.version) == (scope_id, "still dots", 2)
        entry = pc.remember(scope_id, "A dot is a valid Scope id.")
        memory = entry.citation.memory_ref
        exact = pc.get_artifact_revision(scope_id, "memory", memory.artifact_id, memory.revision)
        assert exact.memory is not None and exact.memory[0].text == "A dot is a valid Scope id."
        assert pc.delete_scope(scope_id).scope_id == scope_id
        with pytest.raises(NotFoundError):
            pc.get_scope(scope_id)
        assert pc.get_scope("neighbour").title == "the Scope next door"
        assert [s.scope_id for s in pc.list_scopes().scopes] == ["neighbour"]


@pytest.mark.parametrize("scope_id", DOT_IDS)
async def test_the_async_client_addresses_a_dot_scope_too(server: LiveServer, scope_id: str) -> None:
    async with AsyncPowerContextClient(server.base_url) as pc:
        await pc.create_scope(scope_id, title="dots")
        assert (await pc.get_scope(scope_id)).title == "dots"
        assert (await pc.update_scope(scope_id, expected_version=1, title="t")).version == 2
        assert (await pc.delete_scope(scope_id)).scope_id == scope_id
        with pytest.raises(NotFoundError):
            await pc.get_scope(scope_id)
