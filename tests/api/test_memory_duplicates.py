"""No duplicate Memory entries (issue 33 item 1): a remember or batch entry whose text reads the
same as an active entry's head (NFKC, case folding, whitespace collapsed) stores nothing and is
cited as that entry, with `duplicate: true`; `deduplicate: false` stores it anyway."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from .helpers import new_scope, remember, search


def batch(http: httpx.Client, scope_id: str, texts: list[str], **fields: Any) -> dict[str, Any]:
    entries = [{"text": text} for text in texts]
    response = http.post(
        "/v1/memory/remember/batch", json={"scope_id": scope_id, "entries": entries, **fields}
    )
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def citation(revision: int, entry: int, version: int = 1) -> dict[str, Any]:
    return {
        "memory_ref": {"family": "memory", "artifact_id": "memory", "revision": revision},
        "entry_id": f"entry-{entry}",
        "entry_version_id": f"entry-{entry}-v{version}",
    }


def listed(http: httpx.Client, scope_id: str) -> list[str]:
    response = http.post("/v1/memory/entries/list", json={"scope_id": scope_id, "limit": 200})
    assert response.status_code == 200, response.text
    return [entry["text"] for entry in response.json()["entries"]]


def memory_revision(http: httpx.Client, scope_id: str) -> int:
    """The Scope's Memory head revision: listed entries are cited at it (0 with none listed)."""
    response = http.post("/v1/memory/entries/list", json={"scope_id": scope_id, "limit": 1})
    entries = response.json()["entries"]
    return int(entries[0]["citation"]["memory_ref"]["revision"]) if entries else 0


@pytest.mark.parametrize(
    "variant",
    [
        "The ferry leaves at 7:10.",
        "  the FERRY   leaves\tat 7:10. ",
        "Ｔｈｅ ｆｅｒｒｙ leaves at 7:10.",  # full-width letters: NFKC folds them
        "THE FERRY LEAVES AT 7:10.",
    ],
)
def test_a_duplicate_remember_answers_with_the_active_entry_and_stores_nothing(
    http: httpx.Client, variant: str
) -> None:
    scope_id = new_scope(http)
    first = remember(http, scope_id, "The ferry leaves at 7:10.", kind="decision")
    again = remember(http, scope_id, variant)
    assert again == {**first, "duplicate": True}
    assert first["duplicate"] is False
    # No revision was committed, no entry counted and nothing indexed twice.
    assert memory_revision(http, scope_id) == 1
    assert listed(http, scope_id) == ["The ferry leaves at 7:10."]
    assert [hit["citation"] for hit in search(http, "memory", scope_id, "ferry")] == [citation(1, 1)]
    assert remember(http, scope_id, "Something new")["citation"] == citation(2, 2)


def test_deduplicate_false_stores_a_second_entry(http: httpx.Client) -> None:
    scope_id = new_scope(http)
    remember(http, scope_id, "Tabs, not spaces.")
    second = remember(http, scope_id, "tabs, not spaces.", deduplicate=False)
    assert (second["citation"], second["duplicate"]) == (citation(2, 2), False)
    assert listed(http, scope_id) == ["Tabs, not spaces.", "tabs, not spaces."]


def test_a_batch_reports_each_duplicate_including_those_within_it(http: httpx.Client) -> None:
    scope_id = new_scope(http)
    remember(http, scope_id, "alpha fact")
    answer = batch(http, scope_id, ["ALPHA  fact", "beta fact", "Beta Fact", "gamma fact", "beta   FACT"])
    assert answer == {
        "citations": [citation(1, 1), citation(2, 2), citation(2, 2), citation(3, 3), citation(2, 2)],
        "duplicate": [True, False, True, False, True],
    }
    assert listed(http, scope_id) == ["alpha fact", "beta fact", "gamma fact"]
    assert remember(http, scope_id, "delta fact")["citation"] == citation(4, 4)


def test_a_batch_of_only_duplicates_commits_nothing(http: httpx.Client) -> None:
    scope_id = new_scope(http)
    remember(http, scope_id, "only one")
    answer = batch(http, scope_id, ["Only One", "only  one"], expected_revision=1)
    assert answer == {"citations": [citation(1, 1)] * 2, "duplicate": [True, True]}
    assert memory_revision(http, scope_id) == 1


def test_a_batch_with_deduplicate_false_stores_every_entry(http: httpx.Client) -> None:
    scope_id = new_scope(http)
    remember(http, scope_id, "same")
    answer = batch(http, scope_id, ["same", "SAME"], deduplicate=False)
    assert answer == {"citations": [citation(2, 2), citation(3, 3)], "duplicate": [False, False]}


def test_only_active_heads_count(http: httpx.Client) -> None:
    scope_id = new_scope(http)
    old = remember(http, scope_id, "The build uses tox.")
    revised = http.post(
        "/v1/memory/entries/revise",
        json={"scope_id": scope_id, "citation": old["citation"], "text": "The build uses make."},
    )
    assert revised.status_code == 200, revised.text
    # The revised entry's old text is nobody's head: a new entry.
    assert remember(http, scope_id, "the build uses tox.")["citation"] == citation(3, 2)
    # Its new head is.
    head = remember(http, scope_id, "The build uses MAKE.")
    assert (head["citation"], head["text"], head["duplicate"]) == (
        citation(3, 1, 2),
        "The build uses make.",
        True,
    )
    # A retired entry is not active.
    gone = remember(http, scope_id, "Deploys happen on Fridays.")
    retired = http.post(
        "/v1/memory/entries/retire", json={"scope_id": scope_id, "citation": gone["citation"]}
    )
    assert retired.status_code == 200, retired.text
    again = remember(http, scope_id, "Deploys happen on Fridays.")
    assert (again["citation"], again["duplicate"]) == (citation(6, 4), False)
    # Nor is an erased one.
    erased = http.post("/v1/memory/entries/erase", json={"scope_id": scope_id, "entry_id": "entry-4"})
    assert erased.status_code == 200, erased.text
    assert remember(http, scope_id, "Deploys happen on Fridays.")["duplicate"] is False


def test_equal_texts_in_other_scopes_are_not_duplicates(http: httpx.Client) -> None:
    a, b = new_scope(http), new_scope(http)
    remember(http, a, "shared words")
    assert remember(http, b, "shared words")["duplicate"] is False
