"""Facts that expire (issue 33 item 2): from its `expires_at` on, an entry is no longer recalled by
search or prepare (legacy, assembly, explain), with no background job: each read compares with its
own clock. It stays readable by citation and history, listable with `include_expired`, and moves
with export and import. The store's clock is set by the test, never slept on."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from powercontext_runtime.store import clock

from .helpers import assert_invalid_request, new_scope, prepare, remember, search

EXPIRES = "2031-03-01T09:00:00Z"
STORED = "2031-03-01T09:00:00.000000+00:00"  # the store's time form of EXPIRES
BEFORE = "2031-03-01T08:59:59.000000+00:00"  # one second before
NDJSON = {"Content-Type": "application/x-ndjson"}

SetClock = Callable[[str], None]


@pytest.fixture
def set_clock(monkeypatch: pytest.MonkeyPatch) -> SetClock:
    """Set the time every expiry check of the (in-process) server reads."""

    def set_to(instant: str) -> None:
        monkeypatch.setattr(clock, "now", lambda: instant)

    return set_to


def recalled(http: httpx.Client, scope_id: str, query: str) -> dict[str, Any]:
    """What each recall path returns for `query`: search hits, legacy and assembled text, the
    explain receipt's Memory items."""
    explained = http.post(
        "/v1/context/prepare/explain", json={"scope_id": scope_id, "query": query, "assembly": {}}
    )
    assert explained.status_code == 200, explained.text
    return {
        "search": [hit["text"] for hit in search(http, "memory", scope_id, query)],
        "legacy": prepare(http, scope_id, query)["content"],
        "assembly": prepare(http, scope_id, query, assembly={})["content"],
        "receipt": [item for item in explained.json()["items"] if item["family"] == "memory"],
    }


def listed(http: httpx.Client, scope_id: str, **fields: Any) -> list[tuple[str, str | None]]:
    response = http.post("/v1/memory/entries/list", json={"scope_id": scope_id, **fields})
    assert response.status_code == 200, response.text
    return [(entry["text"], entry["expires_at"]) for entry in response.json()["entries"]]


def test_an_entry_is_recalled_until_the_instant_it_expires(http: httpx.Client, set_clock: SetClock) -> None:
    scope_id = new_scope(http)
    set_clock(BEFORE)
    entry = remember(http, scope_id, "The heron nests by the weir.", expires_at=EXPIRES)
    assert entry["expires_at"] == STORED
    remember(http, scope_id, "The heron fishes at dawn.")
    before = recalled(http, scope_id, "heron")
    assert sorted(before["search"]) == ["The heron fishes at dawn.", "The heron nests by the weir."]
    assert "nests by the weir" in before["legacy"] and "nests by the weir" in before["assembly"]
    assert sorted((i["entry_id"], i.get("expires_at")) for i in before["receipt"]) == [
        ("entry-1", STORED),
        ("entry-2", None),
    ]

    set_clock(STORED)  # the instant itself: no longer recalled
    after = recalled(http, scope_id, "heron")
    assert after["search"] == ["The heron fishes at dawn."]
    assert "weir" not in after["legacy"] and "weir" not in after["assembly"]
    assert [i["entry_id"] for i in after["receipt"]] == ["entry-2"]
    # Readable by its citation and in its history, listable on request.
    read = http.post("/v1/memory/entries/get", json={"scope_id": scope_id, "citation": entry["citation"]})
    assert read.status_code == 200 and read.json() == {k: v for k, v in entry.items() if k != "duplicate"}
    history = http.post("/v1/memory/entries/history", json={"scope_id": scope_id, "entry_id": "entry-1"})
    assert [v["expires_at"] for v in history.json()["versions"]] == [STORED]
    assert listed(http, scope_id) == [("The heron fishes at dawn.", None)]
    assert listed(http, scope_id, include_expired=True) == [
        ("The heron nests by the weir.", STORED),
        ("The heron fishes at dawn.", None),
    ]


def test_expired_entries_take_no_place_in_the_candidate_pool(http: httpx.Client, set_clock: SetClock) -> None:
    """Seventeen expired entries rank above the one live one: more than the pool of 16 holds."""
    scope_id = new_scope(http)
    set_clock(BEFORE)
    texts = [{"text": f"kestrel kestrel kestrel hovering {i}", "expires_at": EXPIRES} for i in range(17)]
    response = http.post("/v1/memory/remember/batch", json={"scope_id": scope_id, "entries": texts})
    assert response.status_code == 200, response.text
    remember(http, scope_id, "a kestrel was seen once over the long meadow by the old mill")
    set_clock(STORED)
    found = recalled(http, scope_id, "kestrel")
    assert found["search"] == ["a kestrel was seen once over the long meadow by the old mill"]
    assert "old mill" in found["legacy"] and "old mill" in found["assembly"]
    limited = http.post("/v1/memory/search", json={"scope_id": scope_id, "query": "kestrel", "limit": 1})
    assert [hit["citation"]["entry_id"] for hit in limited.json()["hits"]] == ["entry-18"]


def test_revise_keeps_sets_or_clears_the_expiry(http: httpx.Client, set_clock: SetClock) -> None:
    scope_id = new_scope(http)
    set_clock(BEFORE)
    first = remember(http, scope_id, "Standup is at ten.", expires_at=EXPIRES)

    def revise(citation: dict[str, Any], text: str, **fields: Any) -> dict[str, Any]:
        body = {"scope_id": scope_id, "citation": citation, "text": text, **fields}
        response = http.post("/v1/memory/entries/revise", json=body)
        assert response.status_code == 200, response.text
        answer: dict[str, Any] = response.json()
        return answer

    kept = revise(first["citation"], "Standup is at half past ten.")
    assert kept["expires_at"] == STORED and "duplicate" not in kept
    moved = revise(kept["citation"], "Standup is at eleven.", expires_at="2031-03-01T10:00:00.5+00:00")
    assert moved["expires_at"] == "2031-03-01T10:00:00.500000+00:00"
    cleared = revise(moved["citation"], "Standup is at noon.", expires_at=None)
    assert cleared["expires_at"] is None
    set_clock("2040-01-01T00:00:00.000000+00:00")
    assert recalled(http, scope_id, "standup")["search"] == ["Standup is at noon."]


def test_an_expired_entry_is_no_duplicate(http: httpx.Client, set_clock: SetClock) -> None:
    scope_id = new_scope(http)
    set_clock(BEFORE)
    remember(http, scope_id, "Coffee is in the kitchen.", expires_at=EXPIRES)
    assert remember(http, scope_id, "coffee is in the kitchen.")["duplicate"] is True
    set_clock(STORED)
    again = remember(http, scope_id, "coffee is in the kitchen.")
    assert (again["citation"]["entry_id"], again["duplicate"]) == ("entry-2", False)


@pytest.mark.parametrize(
    "value",
    [
        "2031-03-01T11:00:00+02:00",  # not UTC
        "2031-03-01T09:00:00",  # no offset
        "2031-03-01 09:00:00Z",  # not RFC 3339
        "2031-02-30T09:00:00Z",  # no such day
        "0000-01-01T00:00:00Z",  # no year 0
        "next tuesday",
        20310301,
    ],
)
def test_a_bad_expiry_is_a_422_that_names_where(http: httpx.Client, value: object) -> None:
    scope_id = new_scope(http)
    secret = str(value)
    errors = assert_invalid_request(
        http.post("/v1/memory/remember", json={"scope_id": scope_id, "text": "t", "expires_at": value}),
        secret,
    )
    assert [e["loc"][-1] for e in errors] == ["expires_at"]
    entries = [{"text": "fine"}, {"text": "bad", "expires_at": value}]
    errors = assert_invalid_request(
        http.post("/v1/memory/remember/batch", json={"scope_id": scope_id, "entries": entries}), secret
    )
    assert [e["loc"][-3:] for e in errors] == [["entries", 1, "expires_at"]]
    assert listed(http, scope_id, include_expired=True) == []


def test_the_expiry_moves_with_export_and_import(http: httpx.Client, set_clock: SetClock) -> None:
    scope_id, copy = new_scope(http), f"copy:{uuid.uuid4().hex[:10]}"
    set_clock(BEFORE)
    remember(http, scope_id, "The kingfisher perches on the post.", expires_at=EXPIRES)
    remember(http, scope_id, "The kingfisher dives.")
    exported = http.get(f"/v1/scopes/{scope_id}/export")
    assert exported.status_code == 200, exported.text
    versions = [
        line for line in exported.text.splitlines() if line.startswith('{"type":"memory_entry_version"')
    ]
    assert [('"expires_at"' in line) for line in versions] == [True, False]
    imported = http.post(f"/v1/scopes/{copy}/import", content=exported.content, headers=NDJSON)
    assert imported.status_code == 201, imported.text
    assert listed(http, copy) == listed(http, scope_id)
    assert recalled(http, copy, "kingfisher")["search"] == recalled(http, scope_id, "kingfisher")["search"]
    set_clock(STORED)
    assert recalled(http, copy, "kingfisher")["search"] == ["The kingfisher dives."]
    # The import hashed the heads for the duplicate check.
    assert remember(http, copy, "the kingfisher dives.")["duplicate"] is True
