"""`POST /v1/memory/remember/batch`: many entries, one transaction, one revision each, in order;
one invalid entry stores nothing (issue #15)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from .helpers import assert_invalid_request, new_scope, prepare, remember, search


def batch(http: httpx.Client, scope_id: str, entries: list[Any], **fields: Any) -> httpx.Response:
    return http.post("/v1/memory/remember/batch", json={"scope_id": scope_id, "entries": entries, **fields})


def stored(http: httpx.Client, scope_id: str) -> list[dict[str, Any]]:
    """Every active entry of the Scope, page by page."""
    entries: list[dict[str, Any]] = []
    body: dict[str, Any] = {"scope_id": scope_id, "limit": 200}
    while True:
        response = http.post("/v1/memory/entries/list", json=body)
        assert response.status_code == 200, response.text
        page = response.json()
        entries += page["entries"]
        if page["next_cursor"] is None:
            return entries
        body["cursor"] = page["next_cursor"]


def test_each_entry_gets_its_citation_in_order_and_reads_back_exactly(http: httpx.Client) -> None:
    scope_id = new_scope(http)
    first = remember(http, scope_id, "before the batch")["citation"]
    texts = ["otter by the river", "heron on the bank 記憶", "kingfisher at dawn"]
    response = batch(
        http, scope_id, [{"text": texts[0]}, {"text": texts[1], "kind": "decision"}, {"text": texts[2]}]
    )
    assert response.status_code == 200, response.text
    citations = response.json()["citations"]
    assert [c["memory_ref"]["revision"] for c in citations] == [2, 3, 4]
    assert [c["entry_id"] for c in citations] == ["entry-2", "entry-3", "entry-4"]
    for citation, text, kind in zip(citations, texts, ["fact", "decision", "fact"], strict=True):
        read = http.post("/v1/memory/entries/get", json={"scope_id": scope_id, "citation": citation})
        assert read.status_code == 200, read.text
        assert read.json() == {
            "citation": citation,
            "text": text,
            "kind": kind,
            "state": "active",
            "expires_at": None,
        }
    assert first["memory_ref"]["revision"] == 1
    hits = http.post("/v1/memory/search", json={"scope_id": scope_id, "query": "heron"}).json()["hits"]
    assert [hit["citation"]["entry_version_id"] for hit in hits] == ["entry-3-v1"]
    content = http.post("/v1/context/prepare", json={"scope_id": scope_id, "query": "kingfisher"}).json()
    assert "kingfisher at dawn" in content["content"]
    # The next single write continues the revisions and entry numbers.
    assert remember(http, scope_id, "after")["citation"]["memory_ref"]["revision"] == 5


def test_a_thousand_entries_are_one_request_and_each_is_found_by_its_own_words(http: httpx.Client) -> None:
    """A batch this large is tokenised as a whole (words and CJK counted across its texts): search
    and prepare must find each entry by what only it says."""
    scope_id = new_scope(http)
    texts = [f"note {i} walrus" for i in range(1000)]
    texts[537] = "Releases of the NARWHAL notes"  # found by `released`: stemmed
    texts[812] = "记忆系统，第八百十二条 walrus"  # CJK characters and pairs, after full-width punctuation
    response = batch(http, scope_id, [{"text": text} for text in texts])
    assert response.status_code == 200, response.text
    citations = response.json()["citations"]
    assert [c["entry_id"] for c in citations] == [f"entry-{i}" for i in range(1, 1001)]
    assert len(stored(http, scope_id)) == 1000
    for query, at in (("released", 537), ("记忆系统", 812), ("note 404", 404)):
        hits = search(http, "memory", scope_id, query)
        top = hits[0]
        assert (top["citation"]["entry_version_id"], top["text"]) == (
            citations[at]["entry_version_id"],
            texts[at],
        )
    assert "记忆系统，第八百十二条 walrus" in prepare(http, scope_id, "记忆系统")["content"]


@pytest.mark.parametrize(
    ("entries", "loc"),
    [
        ([{"text": "fine"}, {"text": "also fine"}, {"text": "   "}], ["body", "entries", 2, "text"]),
        ([{"text": "fine"}, {"text": "x", "kind": "Not A Kind"}], ["body", "entries", 1, "kind"]),
        ([{"text": "fine"}, {"text": "x", "secret": "s3cr3t"}], ["body", "entries", 1]),
        ([{"text": "fine"}, "bare string"], ["body", "entries", 1]),
        ([{"text": "y" * 16001}], ["body", "entries", 0, "text"]),
        ([], ["body", "entries"]),
        ([{"text": "z"}] * 1001, ["body", "entries"]),
    ],
)
def test_one_invalid_entry_is_named_and_nothing_is_stored(
    http: httpx.Client, entries: list[Any], loc: list[Any]
) -> None:
    scope_id = new_scope(http)
    remember(http, scope_id, "kept")
    errors = assert_invalid_request(batch(http, scope_id, entries), "s3cr3t")
    assert any(error["loc"] == loc for error in errors), errors
    assert [entry["text"] for entry in stored(http, scope_id)] == ["kept"]


def test_a_stale_expected_revision_or_unknown_scope_stores_nothing(http: httpx.Client) -> None:
    scope_id = new_scope(http)
    remember(http, scope_id, "kept")
    stale = batch(http, scope_id, [{"text": "a"}, {"text": "b"}], expected_revision=0)
    assert stale.status_code == 409
    assert stale.json()["error"]["code"] == "revision_conflict"
    current = batch(http, scope_id, [{"text": "a"}], expected_revision=1)
    assert current.status_code == 200, current.text
    assert [entry["text"] for entry in stored(http, scope_id)] == ["kept", "a"]
    missing = batch(http, "project:no-such-scope", [{"text": "a"}])
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "scope_not_found"
