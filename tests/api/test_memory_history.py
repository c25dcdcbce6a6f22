"""`POST /v1/memory/entries/history`: every version of one entry, oldest first, each cited as of the
revision that added it, with the revision that replaced or retired it."""

from __future__ import annotations

from typing import Any

import httpx

from .helpers import assert_invalid_request, new_scope, remember

HISTORY = "/v1/memory/entries/history"


def history(http: httpx.Client, scope_id: str, entry_id: str) -> httpx.Response:
    return http.post(HISTORY, json={"scope_id": scope_id, "entry_id": entry_id})


def write(http: httpx.Client, action: str, body: dict[str, Any]) -> dict[str, Any]:
    response = http.post(f"/v1/memory/entries/{action}", json=body)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def test_each_version_is_cited_where_it_was_added_and_closed_where_it_was_replaced(
    http: httpx.Client,
) -> None:
    scope_id = new_scope(http)
    first = remember(http, scope_id, "The ferry leaves at 7:10.", kind="decision")
    remember(http, scope_id, "An unrelated fact in between.")
    second = write(
        http,
        "revise",
        {"scope_id": scope_id, "citation": first["citation"], "text": "The ferry leaves at 7:40."},
    )
    live = history(http, scope_id, "entry-1")
    assert live.status_code == 200, live.text
    assert live.json() == {
        "entry_id": "entry-1",
        "kind": "decision",
        "state": "active",
        "versions": [
            {
                "citation": first["citation"],
                "text": "The ferry leaves at 7:10.",
                "removed_revision": 3,
                "expires_at": None,
            },
            {
                "citation": second["citation"],
                "text": "The ferry leaves at 7:40.",
                "removed_revision": None,
                "expires_at": None,
            },
        ],
    }
    # Each citation reads its version back exactly.
    for version in live.json()["versions"]:
        read = http.post(
            "/v1/memory/entries/get", json={"scope_id": scope_id, "citation": version["citation"]}
        )
        assert read.status_code == 200 and read.json()["text"] == version["text"]

    retired = write(http, "retire", {"scope_id": scope_id, "citation": second["citation"]})
    after = history(http, scope_id, "entry-1").json()
    assert after["state"] == "retired"
    assert [v["removed_revision"] for v in after["versions"]] == [
        3,
        retired["citation"]["memory_ref"]["revision"],
    ]
    assert [v["citation"] for v in after["versions"]] == [first["citation"], second["citation"]]


def test_an_unknown_entry_or_scope_is_404_and_an_erased_entry_410(http: httpx.Client) -> None:
    scope_id = new_scope(http)
    entry = remember(http, scope_id, "Erase me later.")
    assert history(http, scope_id, "entry-9").json()["error"]["code"] == "entry_not_found"
    assert history(http, scope_id, "entry-9").status_code == 404
    missing = history(http, "project:nowhere-to-be-found", "entry-1")
    assert (missing.status_code, missing.json()["error"]["code"]) == (404, "scope_not_found")
    erased = http.post(
        "/v1/memory/entries/erase", json={"scope_id": scope_id, "entry_id": entry["citation"]["entry_id"]}
    )
    assert erased.status_code == 200, erased.text
    gone = history(http, scope_id, entry["citation"]["entry_id"])
    assert (gone.status_code, gone.json()["error"]["code"]) == (410, "entry_erased")


def test_an_invalid_request_is_refused_without_echoing_it(http: httpx.Client) -> None:
    scope_id = new_scope(http)
    secret = "x" * 129
    assert_invalid_request(http.post(HISTORY, json={"scope_id": scope_id, "entry_id": secret}), secret)
    assert_invalid_request(http.post(HISTORY, json={"scope_id": scope_id, "entry_id": "entry-1", "zz": 1}))
