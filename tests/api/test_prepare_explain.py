"""POST /v1/context/prepare/explain: prepare's answer plus a receipt of every recalled candidate.

Checked on delivered bytes: the explanation's text is prepare's for the same body, and the items it
marks included are exactly the entries the text cites, in the text's order.
"""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import pytest

from .helpers import assert_invalid_request, experience, new_scope, prepare, profile, remember, topic

EXPLAIN = "/v1/context/prepare/explain"
PREPARED_KEYS = {"schema", "status", "content", "content_bytes"}

# The standard text's metadata lines of one entry (prepare-standard-context-text.md).
_ENTRY = re.compile(
    r'    Scope: "(?P<scope>[^"]+)"\n'
    r'    Artifact: family="(?P<family>[^"]+)", id="(?P<artifact>[^"]+)", revision=(?P<revision>\d+)\n'
    r'(?:    Entry: id="(?P<entry>[^"]+)", version="(?P<version>[^"]+)"\n)?'
)


def explain(http: httpx.Client, body: dict[str, Any]) -> dict[str, Any]:
    response = http.post(EXPLAIN, json=body)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def identity(item: dict[str, Any]) -> tuple[Any, ...]:
    return (
        item["scope_id"],
        item["family"],
        item["artifact_id"],
        item["revision"],
        item.get("entry_id"),
        item.get("entry_version_id"),
    )


def cited_in_text(content: str) -> list[tuple[Any, ...]]:
    return [
        (m["scope"], m["family"], m["artifact"], int(m["revision"]), m["entry"], m["version"])
        for m in _ENTRY.finditer(content)
    ]


def cited_in_legacy(content: str, scope_id: str) -> list[tuple[Any, ...]]:
    envelope = json.loads(content.split("\n")[-2])
    cited = []
    for item in envelope["items"]:
        citation = item["citation"]
        if "memory_ref" in citation:
            ref, scope = citation["memory_ref"], scope_id
        elif "memory" in citation:
            ref, scope = citation["memory"]["artifact"], citation["memory"]["scope_id"]
        elif "artifact_ref" in citation:
            ref, scope = citation["artifact_ref"], scope_id
        else:
            ref, scope = citation["artifact"]["artifact"], citation["artifact"]["scope_id"]
        entry = (citation.get("entry_id"), citation.get("entry_version_id"))
        cited.append((scope, ref["family"], ref["artifact_id"], ref["revision"], *entry))
    return cited


@pytest.fixture
def world(http: httpx.Client) -> tuple[str, str]:
    """A Scope with every family and a Context Reference, all matching the word "gateway"."""
    shared = new_scope(http, "team")
    for i in range(3):
        remember(http, shared, f"Shared gateway note {i}: the gateway retries twice. " + "pad " * (40 * i))
    scope_id = new_scope(http, context_references=[shared])
    for i in range(10):
        remember(http, scope_id, f"Gateway fact {i}: deploy the gateway on day {i}. " + "detail " * (30 * i))
    for i in range(3):
        experience(
            http,
            scope_id,
            f"gateway outage {i}",
            "restarted the gateway",
            "it recovered",
            f"lesson {i} gateway",
        )
    topic(http, scope_id, "Gateway", "How the gateway is deployed", "The gateway runs in two regions.")
    profile(http, scope_id, "# Team\nWe own the gateway.")
    return scope_id, shared


ALL_FAMILIES = {
    "sections": [
        {"family": "profile", "limit": 1},
        {"family": "memory", "limit": 4},
        {"family": "experience", "limit": 2},
        {"family": "topic-memory", "limit": 1},
    ],
    "show": ["recall_rank"],
}
BODIES: list[dict[str, Any]] = [
    {},  # legacy
    {"assembly": {}},
    {"assembly": ALL_FAMILIES},
    {"assembly": {"sections": [{"family": "memory", "limit": 8}]}},
    {"assembly": {"sections": []}},
]


@pytest.mark.parametrize("max_bytes", [512, 900, 1500, 4000, 32768])
@pytest.mark.parametrize("extra", BODIES, ids=["legacy", "defaults", "all-families", "memory-8", "none"])
def test_receipt_text_is_prepares_and_included_items_are_the_cited_entries(
    http: httpx.Client, world: tuple[str, str], extra: dict[str, Any], max_bytes: int
) -> None:
    scope_id, _ = world
    body = {"scope_id": scope_id, "query": "gateway deploy lesson", "max_bytes": max_bytes, **extra}
    prepared = prepare(
        http, scope_id, body["query"], **{k: v for k, v in body.items() if k not in ("scope_id", "query")}
    )
    explained = explain(http, body)
    assert {k: explained[k] for k in PREPARED_KEYS} == prepared
    included = [identity(item) for item in explained["items"] if item["included"]]
    if prepared["content"] is None:
        assert included == []
    elif "assembly" in extra:
        assert included == cited_in_text(prepared["content"])
    else:
        assert included == cited_in_legacy(prepared["content"], scope_id)
    for item in explained["items"]:
        assert (item["reason"] is None) == item["included"]
        assert item["bytes"] > 0 if item["included"] else item["bytes"] == 0
        assert ("entry_id" in item) == (item["family"] == "memory")
        assert not item["truncated"] or item["included"]


def test_limits_and_budget_name_their_reason(http: httpx.Client, world: tuple[str, str]) -> None:
    scope_id, shared = world
    limited = explain(
        http,
        {
            "scope_id": scope_id,
            "query": "gateway",
            "assembly": {"sections": [{"family": "memory", "limit": 2}]},
        },
    )
    memory = [item for item in limited["items"] if item["family"] == "memory"]
    # Ten own entries and three referenced ones: 13 candidates, cleaned ranks 1..13, two included.
    assert [item["recall_rank"] for item in memory] == list(range(1, 14))
    assert [item["included"] for item in memory] == [True, True] + [False] * 11
    assert {item["reason"] for item in memory[2:]} == {"limit"}
    assert {item["scope_id"] for item in memory} == {scope_id, shared}

    tight = explain(
        http,
        {
            "scope_id": scope_id,
            "query": "gateway",
            "max_bytes": 1100,
            "assembly": {"sections": [{"family": "memory", "limit": 8}]},
        },
    )
    reasons = {item["reason"] for item in tight["items"] if not item["included"]}
    assert reasons <= {"budget", "below_minimum_body"} and reasons
    assert any(item["included"] for item in tight["items"])


def test_legacy_receipt_keeps_the_interleaved_order_and_its_limits(
    http: httpx.Client, world: tuple[str, str]
) -> None:
    scope_id, _ = world
    explained = explain(http, {"scope_id": scope_id, "query": "gateway lesson deploy", "max_bytes": 32768})
    included = [item for item in explained["items"] if item["included"]]
    # Memory, Topic, Experience, Memory, Experience, Memory…: at most 8, at most 2 Experience.
    assert [item["family"] for item in included[:5]] == [
        "memory",
        "topic-memory",
        "experience",
        "memory",
        "experience",
    ]
    assert len(included) == 8
    experience_items = [item for item in explained["items"] if item["family"] == "experience"]
    assert [item["reason"] for item in experience_items] == [None, None, "limit"]
    assert {item["reason"] for item in explained["items"] if not item["included"]} == {"limit"}


def test_errors_are_prepares(http: httpx.Client, world: tuple[str, str]) -> None:
    scope_id, _ = world
    for body in (
        {"scope_id": scope_id, "query": "q", "max_bytes": 10},
        {"scope_id": scope_id, "query": "q", "assembly": None},
        {"scope_id": scope_id, "query": "q", "secret-field-value": 1},
    ):
        assert http.post(EXPLAIN, json=body).json() == http.post("/v1/context/prepare", json=body).json()
        assert_invalid_request(http.post(EXPLAIN, json=body), "secret-field-value")
    missing = {"scope_id": "project:no-such-scope", "query": "q"}
    answer = http.post(EXPLAIN, json=missing)
    assert answer.status_code == 404
    assert answer.json() == http.post("/v1/context/prepare", json=missing).json()
