"""Memory through HTTP: remember, search order, revise, retire, exact reads, listing."""

from __future__ import annotations

import httpx

from .helpers import new_scope, remember


def search(http: httpx.Client, scope_id: str, query: str, limit: int = 10) -> list[dict[str, object]]:
    response = http.post("/v1/memory/search", json={"scope_id": scope_id, "query": query, "limit": limit})
    assert response.status_code == 200, response.text
    hits: list[dict[str, object]] = response.json()["hits"]
    return hits


def test_remember_returns_the_exact_citation(http: httpx.Client) -> None:
    scope_id = new_scope(http)
    entry = remember(http, scope_id, "Run make contract-test after API changes.")
    assert entry == {
        "citation": {
            "memory_ref": {"family": "memory", "artifact_id": "memory", "revision": 1},
            "entry_id": "entry-1",
            "entry_version_id": "entry-1-v1",
        },
        "text": "Run make contract-test after API changes.",
        "kind": "fact",
        "state": "active",
        "expires_at": None,
        "duplicate": False,
    }
    second = remember(http, scope_id, "Another fact", kind="preference")
    assert second["citation"]["memory_ref"]["revision"] == 2 and second["kind"] == "preference"


def test_expected_revision_guards_remember(http: httpx.Client) -> None:
    scope_id = new_scope(http)
    remember(http, scope_id, "first", expected_revision=0)
    response = http.post(
        "/v1/memory/remember", json={"scope_id": scope_id, "text": "late", "expected_revision": 0}
    )
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "revision_conflict"
    assert [h["text"] for h in search(http, scope_id, "late first")] == ["first"]


def test_search_finds_short_chinese_words_inside_longer_ones(http: httpx.Client) -> None:
    scope_id = new_scope(http)
    remember(http, scope_id, "我们的记忆系统很可靠")
    remember(http, scope_id, "与此无关的句子")
    assert [h["text"] for h in search(http, scope_id, "记忆")] == ["我们的记忆系统很可靠"]


def test_search_ranks_better_matches_first_and_respects_limit(http: httpx.Client) -> None:
    scope_id = new_scope(http)
    remember(http, scope_id, "deploy notes about the database")
    remember(http, scope_id, "database migration database rollback database")
    remember(http, scope_id, "unrelated gardening tips")
    hits = search(http, scope_id, "database")
    assert [h["text"] for h in hits] == [
        "database migration database rollback database",
        "deploy notes about the database",
    ]
    assert len(search(http, scope_id, "database", limit=1)) == 1


def test_search_ties_break_deterministically_newest_first(http: httpx.Client) -> None:
    scope_id = new_scope(http)
    for _i in range(3):
        remember(http, scope_id, "same words here", deduplicate=False)
    first = search(http, scope_id, "words")
    assert [h["citation"]["entry_id"] for h in first] == ["entry-3", "entry-2", "entry-1"]  # type: ignore[index]
    assert search(http, scope_id, "words") == first


def test_search_is_confined_to_its_scope(http: httpx.Client) -> None:
    a, b = new_scope(http), new_scope(http)
    remember(http, a, "zebra crossing")
    assert search(http, b, "zebra") == []


def test_revise_keeps_the_old_version_readable_by_its_citation(http: httpx.Client) -> None:
    scope_id = new_scope(http)
    old = remember(http, scope_id, "The build uses tox.")
    response = http.post(
        "/v1/memory/entries/revise",
        json={"scope_id": scope_id, "citation": old["citation"], "text": "The build uses make."},
    )
    assert response.status_code == 200
    new = response.json()
    assert new["citation"] == {
        "memory_ref": {"family": "memory", "artifact_id": "memory", "revision": 2},
        "entry_id": "entry-1",
        "entry_version_id": "entry-1-v2",
    }
    exact = http.post("/v1/memory/entries/get", json={"scope_id": scope_id, "citation": old["citation"]})
    assert exact.status_code == 200 and exact.json()["text"] == "The build uses tox."
    assert [h["text"] for h in search(http, scope_id, "build")] == ["The build uses make."]


def test_revising_a_superseded_citation_is_409(http: httpx.Client) -> None:
    scope_id = new_scope(http)
    old = remember(http, scope_id, "v1 text")
    http.post(
        "/v1/memory/entries/revise", json={"scope_id": scope_id, "citation": old["citation"], "text": "v2"}
    )
    response = http.post(
        "/v1/memory/entries/revise", json={"scope_id": scope_id, "citation": old["citation"], "text": "v3"}
    )
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "revision_conflict"


def test_retire_removes_the_entry_from_search_and_listing_but_not_exact_reads(http: httpx.Client) -> None:
    scope_id = new_scope(http)
    keep = remember(http, scope_id, "keep this lighthouse fact")
    gone = remember(http, scope_id, "retire this lighthouse fact")
    response = http.post(
        "/v1/memory/entries/retire", json={"scope_id": scope_id, "citation": gone["citation"]}
    )
    assert response.status_code == 200
    tombstone = response.json()
    assert tombstone["state"] == "retired"
    assert tombstone["citation"]["memory_ref"]["revision"] == 3  # the revision that retired it
    assert [h["text"] for h in search(http, scope_id, "lighthouse")] == [keep["text"]]
    listed = http.post("/v1/memory/entries/list", json={"scope_id": scope_id}).json()
    assert [e["text"] for e in listed["entries"]] == [keep["text"]]
    # Exact reads never change: the live citation still reads active, the tombstone reads retired.
    exact = http.post(
        "/v1/memory/entries/get", json={"scope_id": scope_id, "citation": gone["citation"]}
    ).json()
    assert (exact["text"], exact["state"]) == ("retire this lighthouse fact", "active")
    after = http.post(
        "/v1/memory/entries/get", json={"scope_id": scope_id, "citation": tombstone["citation"]}
    )
    assert after.json() == tombstone
    again = http.post(
        "/v1/memory/entries/retire", json={"scope_id": scope_id, "citation": tombstone["citation"]}
    )
    assert again.status_code == 409


def test_a_citation_naming_nothing_is_404(http: httpx.Client) -> None:
    scope_id = new_scope(http)
    entry = remember(http, scope_id, "exists")
    bogus = {**entry["citation"], "entry_version_id": "entry-1-v9"}
    response = http.post("/v1/memory/entries/get", json={"scope_id": scope_id, "citation": bogus})
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "entry_not_found"
    future = {**entry["citation"], "memory_ref": {**entry["citation"]["memory_ref"], "revision": 99}}
    assert (
        http.post("/v1/memory/entries/get", json={"scope_id": scope_id, "citation": future}).status_code
        == 404
    )


def test_list_pages_through_active_entries_in_creation_order(http: httpx.Client) -> None:
    scope_id = new_scope(http)
    texts = [f"entry number {i}" for i in range(5)]
    for text in texts:
        remember(http, scope_id, text)
    seen: list[str] = []
    body: dict[str, object] = {"scope_id": scope_id, "limit": 2}
    while True:
        page = http.post("/v1/memory/entries/list", json=body).json()
        seen.extend(e["text"] for e in page["entries"])
        if page["next_cursor"] is None:
            break
        body = {**body, "cursor": page["next_cursor"]}
    assert seen == texts


def test_memory_operations_on_an_unknown_scope_are_404(http: httpx.Client) -> None:
    for path, body in (
        ("/v1/memory/remember", {"text": "x"}),
        ("/v1/memory/search", {"query": "x"}),
        ("/v1/memory/entries/list", {}),
    ):
        response = http.post(path, json={"scope_id": "project:absent", **body})
        assert response.status_code == 404, path
        assert response.json()["error"]["code"] == "scope_not_found"
