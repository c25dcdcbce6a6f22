"""Scopes through HTTP: create, read, list, update, optimistic versions, reference rules."""

from __future__ import annotations

import httpx

from .helpers import assert_invalid_request, new_scope


def test_create_returns_201_with_the_descriptor(http: httpx.Client) -> None:
    ref = new_scope(http)
    response = http.post(
        "/v1/scopes",
        json={
            "scope_id": "project:created-" + ref[-6:],
            "title": "Demo",
            "summary": "S",
            "context_references": [ref],
        },
    )
    assert response.status_code == 201
    assert response.json() == {
        "scope_id": "project:created-" + ref[-6:],
        "title": "Demo",
        "summary": "S",
        "context_references": [ref],
        "version": 1,
    }


def test_duplicate_scope_id_is_409(http: httpx.Client) -> None:
    scope_id = new_scope(http)
    response = http.post("/v1/scopes", json={"scope_id": scope_id})
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "scope_exists"


def test_get_unknown_scope_is_404_scope_not_found(http: httpx.Client) -> None:
    response = http.get("/v1/scopes/project:nope-404")
    assert response.status_code == 404
    assert response.json() == {
        "error": {"code": "scope_not_found", "message": "The requested Scope was not found.", "details": None}
    }


def test_update_bumps_version_and_keeps_reference_order(http: httpx.Client) -> None:
    a, b, c = new_scope(http), new_scope(http), new_scope(http)
    scope_id = new_scope(http)
    response = http.put(
        f"/v1/scopes/{scope_id}", json={"expected_version": 1, "context_references": [c, a, b]}
    )
    assert response.status_code == 200
    assert response.json()["context_references"] == [c, a, b]
    assert response.json()["version"] == 2
    assert http.get(f"/v1/scopes/{scope_id}").json()["context_references"] == [c, a, b]
    title_only = http.put(f"/v1/scopes/{scope_id}", json={"expected_version": 2, "title": "T"}).json()
    assert (title_only["title"], title_only["context_references"], title_only["version"]) == (
        "T",
        [c, a, b],
        3,
    )


def test_stale_expected_version_is_409_and_changes_nothing(http: httpx.Client) -> None:
    scope_id = new_scope(http, title="before")
    http.put(f"/v1/scopes/{scope_id}", json={"expected_version": 1, "title": "first"})
    response = http.put(f"/v1/scopes/{scope_id}", json={"expected_version": 1, "title": "second"})
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "revision_conflict"
    assert http.get(f"/v1/scopes/{scope_id}").json()["title"] == "first"


def test_references_must_exist_be_unique_and_not_self(http: httpx.Client) -> None:
    ref = new_scope(http)
    scope_id = new_scope(http)
    for refs, type_ in (
        (["project:missing-ref"], "reference_not_found"),
        ([ref, ref], None),  # uniqueItems in the contract, or the Runtime's own check
        ([scope_id], "reference_self"),
    ):
        response = http.put(
            f"/v1/scopes/{scope_id}", json={"expected_version": 1, "context_references": refs}
        )
        errors = assert_invalid_request(response)
        if type_:
            assert errors[0]["type"] == type_
    assert http.get(f"/v1/scopes/{scope_id}").json()["version"] == 1


def test_list_pages_with_a_cursor_in_id_order(http: httpx.Client) -> None:
    prefix = "list" + new_scope(http)[-6:]
    ids = sorted(new_scope(http, prefix=prefix) for _ in range(5))
    seen: list[str] = []
    cursor = None
    while True:
        params: dict[str, str | int] = {"limit": 2}
        if cursor:
            params["cursor"] = cursor
        page = http.get("/v1/scopes", params=params).json()
        seen.extend(s["scope_id"] for s in page["scopes"])
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert [s for s in seen if s.startswith(prefix)] == ids
    assert seen == sorted(seen)


def test_a_foreign_cursor_is_422(http: httpx.Client) -> None:
    assert_invalid_request(http.get("/v1/scopes", params={"cursor": "not-a-cursor"}))


def test_with_access_disabled_every_action_is_granted_on_any_scope(http: httpx.Client) -> None:
    """No lookup: the answer is the caller's grants, the same for a Scope that exists or not."""
    scope_id = new_scope(http)
    every = ["scope.read", "scope.write", "scope.review", "scope.erase", "scope.export", "server.admin"]
    for target in (scope_id, "project:not-created"):
        response = http.get(f"/v1/scopes/{target}/grants")
        assert (response.status_code, response.json()) == (200, {"scope_id": target, "actions": every})
