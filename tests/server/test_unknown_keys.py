"""A body with tens of thousands of unknown keys (issue 37, item 3).

pydantic reports one error per unknown key; turning 60,000 of them into the wire answer cost
0.36 s of the event loop per request, and a caller without the grant paid the same. The refusal
must be the same envelope as for one unknown key, never name a key, do work bounded by the
schema rather than the key count, and come after the grant check: a caller without access to the
Scope gets its 403 before the server works out what is wrong with the body.

How fast it is refused, and /health/live meanwhile, is printed by `bench/hostile.py`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from powercontext_runtime import token_digest
from powercontext_server import parsing

from .test_http_errors import JSON, error_of, invalid_items, pairs

StartServer = Callable[..., Any]
KEYS = 60_000
EXTRA = {"type": "extra_forbidden", "loc": ["body"], "msg": "Extra inputs are not permitted"}


def flooded(body: dict[str, Any], keys: int = KEYS) -> bytes:
    return json.dumps({**body, **{f"zq{i}": 0 for i in range(keys)}}).encode()


@pytest.fixture
def items_built(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[object]]:
    """Every pydantic error the server turns into a wire item (the servers run in this process)."""
    built: list[object] = []
    real = parsing._item

    def counted(model: Any, error: Any) -> Any:
        built.append(error["type"])
        return real(model, error)

    monkeypatch.setattr(parsing, "_item", counted)
    yield built


def test_sixty_thousand_unknown_keys_are_one_item_naming_no_key(
    http: httpx.Client, items_built: list[object]
) -> None:
    body = flooded({"scope_id": "project:flood", "text": "x"})
    response = http.post("/v1/memory/remember", content=body, headers=JSON)
    assert invalid_items(response) == [EXTRA]
    assert b"zq" not in response.content
    assert len(items_built) <= parsing.MAX_REPORTED_ERRORS


def test_a_flood_still_reports_the_other_errors_where_they_are(
    http: httpx.Client, items_built: list[object]
) -> None:
    response = http.post("/v1/memory/remember", content=flooded({"scope_id": "project:flood"}), headers=JSON)
    assert pairs(invalid_items(response)) == [("missing", ["body", "text"]), ("extra_forbidden", ["body"])]
    section = {"family": "memory", "limit": 1, **{f"zq{i}": 0 for i in range(KEYS)}}
    body = {"scope_id": "a", "query": "q", "max_bytes": 3, "assembly": {"sections": [section]}}
    response = http.post("/v1/context/prepare", json=body)
    assert pairs(invalid_items(response)) == [
        ("greater_than_equal", ["body", "max_bytes"]),
        ("extra_forbidden", ["body", "assembly", "sections", 0]),
    ]
    assert b"zq" not in response.content
    assert len(items_built) <= 2 * parsing.MAX_REPORTED_ERRORS


def test_a_batch_whose_every_entry_holds_unknown_keys_names_the_first_entries(http: httpx.Client) -> None:
    entries = [{"text": "x", **{f"zq{j}": 0 for j in range(50)}} for _ in range(1000)]
    response = http.post("/v1/memory/remember/batch", json={"scope_id": "project:flood", "entries": entries})
    items = invalid_items(response)
    assert len(items) == parsing.MAX_REPORTED_ERRORS
    assert pairs(items) == [("extra_forbidden", ["body", "entries", i]) for i in range(len(items))]


@pytest.fixture
def guarded(start_server: StartServer, tmp_path: Any) -> str:
    """A server whose token `mine-token` may read and write `project:mine` only."""
    auth = tmp_path / "auth.toml"
    auth.write_text(
        "[[principal]]\n"
        'name = "mine"\n'
        f'token_sha256 = "{token_digest("mine-token")}"\n'
        'grants = [{ actions = ["scope.read", "scope.write", "server.admin"], scopes = ["project:mine"] }]\n',
        encoding="utf-8",
    )
    server = start_server(POWERCONTEXT_SERVER_AUTH_FILE=str(auth))
    return str(server.base_url)


def test_without_the_grant_a_flood_is_403_before_its_errors_are_worked_out(
    guarded: str, items_built: list[object]
) -> None:
    with httpx.Client(base_url=guarded, headers={"Authorization": "Bearer mine-token"}) as client:
        theirs = client.post(
            "/v1/memory/remember", content=flooded({"scope_id": "project:theirs"}), headers=JSON
        )
        error_of(theirs, 403, "forbidden")
        assert items_built == []
        mine = client.post("/v1/memory/remember", content=flooded({"scope_id": "project:mine"}), headers=JSON)
        assert pairs(invalid_items(mine)) == [("missing", ["body", "text"]), ("extra_forbidden", ["body"])]


def test_without_the_grant_a_bad_body_is_403_wherever_the_scope_is_named(guarded: str) -> None:
    with httpx.Client(base_url=guarded, headers={"Authorization": "Bearer mine-token"}) as client:
        assert client.post("/v1/scopes", json={"scope_id": "project:mine"}).status_code == 201
        # the Scope in the body
        error_of(client.post("/v1/memory/remember", json={"scope_id": "project:theirs"}), 403, "forbidden")
        invalid_items(client.post("/v1/memory/remember", json={"scope_id": "project:mine"}))
        # the Scope in the path: the body is not even looked at
        update = {"expected_version": "one", "unknown": 1}
        error_of(client.put("/v1/scopes/project:theirs", json=update), 403, "forbidden")
        assert pairs(invalid_items(client.put("/v1/scopes/project:mine", json=update))) == [
            ("int_type", ["body", "expected_version"]),
            ("extra_forbidden", ["body"]),
        ]
