"""POST /v1/context/prepare with assembly omitted: existing-runtime §1–3, byte for byte."""

from __future__ import annotations

import httpx

from .helpers import (
    assert_invalid_request,
    legacy_content,
    memory_item,
    new_scope,
    prepare,
    referenced,
    remember,
)


def test_remember_search_prepare_returns_the_legacy_content_byte_for_byte(http: httpx.Client) -> None:
    scope_id = new_scope(http)
    a = remember(http, scope_id, "After changing OpenAPI, run make api-generate.")
    b = remember(http, scope_id, 'Contract tests catch "drift"\nbetween spec and code.')
    hits = http.post("/v1/memory/search", json={"scope_id": scope_id, "query": "contract OpenAPI"}).json()[
        "hits"
    ]
    result = prepare(http, scope_id, "contract OpenAPI")
    expected = legacy_content([memory_item(h["citation"], h["text"]) for h in hits])
    assert {h["text"] for h in hits} == {a["text"], b["text"]}
    assert result == {
        "schema": "powercontext.prepared-context.v1",
        "status": "ready",
        "content": expected,
        "content_bytes": len(expected.encode("utf-8")),
    }


def test_prepare_response_has_a_request_id_header(http: httpx.Client) -> None:
    scope_id = new_scope(http)
    response = http.post("/v1/context/prepare", json={"scope_id": scope_id, "query": "anything"})
    assert response.headers["X-PowerContext-Request-ID"]


def test_no_match_is_exactly_the_empty_result(http: httpx.Client) -> None:
    scope_id = new_scope(http)
    remember(http, scope_id, "apples")
    assert prepare(http, scope_id, "oranges") == {
        "schema": "powercontext.prepared-context.v1",
        "status": "empty",
        "content": None,
        "content_bytes": 0,
    }


def test_context_references_interleave_after_the_current_scope(http: httpx.Client) -> None:
    ref1, ref2 = new_scope(http), new_scope(http)
    scope_id = new_scope(http, context_references=[ref2, ref1])
    own = [remember(http, scope_id, f"kiwi note own {i}") for i in range(2)]
    r2 = remember(http, ref2, "kiwi note from ref2")
    r1 = remember(http, ref1, "kiwi note from ref1")
    own_hits = http.post("/v1/memory/search", json={"scope_id": scope_id, "query": "kiwi"}).json()["hits"]
    content = prepare(http, scope_id, "kiwi")["content"]
    assert {h["text"] for h in own_hits} == {e["text"] for e in own}
    assert content == legacy_content(
        [
            memory_item(own_hits[0]["citation"], own_hits[0]["text"]),
            memory_item(referenced(r2["citation"], ref2), r2["text"]),
            memory_item(referenced(r1["citation"], ref1), r1["text"]),
            memory_item(own_hits[1]["citation"], own_hits[1]["text"]),
        ]
    )


def test_a_reference_of_a_reference_is_not_read(http: httpx.Client) -> None:
    far = new_scope(http)
    near = new_scope(http, context_references=[far])
    scope_id = new_scope(http, context_references=[near])
    remember(http, far, "walrus fact far away")
    assert prepare(http, scope_id, "walrus")["status"] == "empty"


def test_revise_shows_only_the_new_version_in_prepare(http: httpx.Client) -> None:
    scope_id = new_scope(http)
    old = remember(http, scope_id, "The staging host is alpha.")
    new = http.post(
        "/v1/memory/entries/revise",
        json={"scope_id": scope_id, "citation": old["citation"], "text": "The staging host is beta."},
    ).json()
    assert prepare(http, scope_id, "staging host")["content"] == legacy_content(
        [memory_item(new["citation"], new["text"])]
    )


def test_retire_removes_the_entry_from_prepare(http: httpx.Client) -> None:
    scope_id = new_scope(http)
    gone = remember(http, scope_id, "obsolete penguin fact")
    http.post("/v1/memory/entries/retire", json={"scope_id": scope_id, "citation": gone["citation"]})
    assert prepare(http, scope_id, "penguin")["status"] == "empty"


def test_truncation_keeps_whole_code_points_and_ends_with_ellipsis(http: httpx.Client) -> None:
    scope_id = new_scope(http)
    entry = remember(http, scope_id, "记忆" + "记" * 1200)  # 3606 bytes
    content = prepare(http, scope_id, "记忆", max_bytes=32768)["content"]
    cut = ("记忆" + "记" * 1200).encode("utf-8")[: 2000 - 3].decode("utf-8", "ignore") + "…"
    assert len(cut.encode("utf-8")) <= 2000
    assert content == legacy_content([memory_item(entry["citation"], cut, truncated=True)])


def test_truncated_body_under_64_bytes_is_dropped_and_a_later_short_entry_fits(http: httpx.Client) -> None:
    scope_id = new_scope(http)
    short = remember(http, scope_id, "otter")
    long = remember(http, scope_id, "otter " * 4 + "x" * 3000)  # ranks first: more matches
    hits = http.post("/v1/memory/search", json={"scope_id": scope_id, "query": "otter"}).json()["hits"]
    assert [h["citation"]["entry_id"] for h in hits] == [
        long["citation"]["entry_id"],
        short["citation"]["entry_id"],
    ]
    alone = legacy_content([memory_item(hits[1]["citation"], "otter")])
    # With room for "otter" plus 40 bytes, the long entry's cut would be under 64 bytes.
    budget = len(alone.encode("utf-8")) + 40
    assert budget >= 512
    result = prepare(http, scope_id, "otter", max_bytes=budget)
    assert result["content"] == alone
    assert result["content_bytes"] <= budget


def test_content_never_exceeds_max_bytes_at_the_floor(http: httpx.Client) -> None:
    scope_id = new_scope(http)
    for i in range(10):
        remember(http, scope_id, f"heron {i} " + "ü" * 700)
    result = prepare(http, scope_id, "heron", max_bytes=512)
    assert result["content_bytes"] <= 512
    if result["content"] is not None:
        assert len(result["content"].encode("utf-8")) == result["content_bytes"]


def test_invalid_prepare_requests_are_422_without_echo(http: httpx.Client) -> None:
    scope_id = new_scope(http)
    marker = "SECRET-MARKER-7f3a"
    cases = [
        {"scope_id": scope_id, "query": "q", "max_bytes": 511},
        {"scope_id": scope_id, "query": "q", "max_bytes": 32769},
        {"scope_id": scope_id, "query": "q", "max_bytes": True},
        {"scope_id": scope_id, "query": "q", "max_bytes": 600.5},
        {"scope_id": scope_id, "query": " \t\n\u3000"},
        {"scope_id": scope_id, "query": marker + "Z" * 8193},
        {"scope_id": scope_id, "query": "q", marker: 1},
        {"scope_id": scope_id, "query": "q", "assembly": None},
        {"scope_id": scope_id},
    ]
    for body in cases:
        assert_invalid_request(http.post("/v1/context/prepare", json=body), marker)


def test_max_bytes_bounds_are_inclusive(http: httpx.Client) -> None:
    scope_id = new_scope(http)
    remember(http, scope_id, "bounded fact")
    # The notice, markers and one cited item need 544 bytes here, so 512 is valid but empty.
    assert prepare(http, scope_id, "bounded", max_bytes=512)["status"] == "empty"
    assert prepare(http, scope_id, "bounded", max_bytes=32768)["status"] == "ready"


def test_query_of_8192_characters_is_accepted(http: httpx.Client) -> None:
    scope_id = new_scope(http)
    assert prepare(http, scope_id, "q" * 8192)["status"] == "empty"


def test_unknown_scope_is_404(http: httpx.Client) -> None:
    response = http.post("/v1/context/prepare", json={"scope_id": "project:unknown-x", "query": "q"})
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "scope_not_found"
