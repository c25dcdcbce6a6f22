"""A Memory hit pulls up the entry written next to it when that one matches too (issue 32, item 5):
the reply to a question sits beside it, on both backends."""

from __future__ import annotations

from typing import Any

import httpx

from .helpers import new_scope, prepare, remember

QUERY = "which instrument does Melanie play?"
# Fillers differ (equal texts would be one entry: the duplicate check) and share no query word.
FILLERS = [f"Caroline: the weather was lovely on weekend {n}." for n in range(1, 4)]


def _seed(http: httpx.Client, scope_id: str) -> dict[str, dict[str, Any]]:
    """Two entries about Melanie that stand alone, then the question's turn and its reply."""
    entries = {}
    for name, text in [
        ("alone-1", "Melanie: Melanie went hiking with the kids."),
        ("filler-1", FILLERS[0]),
        ("alone-2", "Melanie: Melanie baked bread for the school fair."),
        ("filler-2", FILLERS[1]),
        ("asked", "Melanie: guess which instrument I started to play this spring!"),
        ("reply", "Caroline: I bet it is the violin, Melanie."),
        ("filler-3", FILLERS[2]),
    ]:
        entries[name] = remember(http, scope_id, text)
    return entries


def _order(http: httpx.Client, scope_id: str, entries: dict[str, dict[str, Any]]) -> list[str]:
    name_of = {e["citation"]["entry_id"]: name for name, e in entries.items()}
    hits = http.post("/v1/memory/search", json={"scope_id": scope_id, "query": QUERY}).json()["hits"]
    return [name_of[h["citation"]["entry_id"]] for h in hits]


def test_the_reply_beside_a_hit_is_recalled_with_it(http: httpx.Client) -> None:
    scope_id = new_scope(http)
    entries = _seed(http, scope_id)
    # By BM25 alone the reply ("Melanie" once) would rank last, below the two entries naming her
    # twice; beside the question's turn it comes second.
    assert _order(http, scope_id, entries) == ["asked", "reply", "alone-1", "alone-2"]
    body = prepare(http, scope_id, QUERY, assembly={"sections": [{"family": "memory", "limit": 2}]})
    assert entries["asked"]["citation"]["entry_id"] in body["content"]
    assert entries["reply"]["citation"]["entry_id"] in body["content"]


def test_neighbours_are_the_live_entries_on_either_side(http: httpx.Client) -> None:
    """Retiring the entry between two makes them neighbours; a retired entry lends no score."""
    scope_id = new_scope(http)
    asked = remember(http, scope_id, "Melanie: guess which instrument I started to play this spring!")
    between = remember(http, scope_id, FILLERS[0])
    reply = remember(http, scope_id, "Caroline: I bet it is the violin, Melanie.")
    remember(http, scope_id, FILLERS[1])
    alone = remember(http, scope_id, "Melanie: Melanie baked bread for the school fair.")
    entries = {"asked": asked, "between": between, "reply": reply, "alone": alone}
    assert _order(http, scope_id, entries) == ["asked", "alone", "reply"]
    retired = http.post(
        "/v1/memory/entries/retire", json={"scope_id": scope_id, "citation": between["citation"]}
    )
    assert retired.status_code == 200, retired.text
    assert _order(http, scope_id, entries) == ["asked", "reply", "alone"]
    retired = http.post(
        "/v1/memory/entries/retire", json={"scope_id": scope_id, "citation": asked["citation"]}
    )
    assert retired.status_code == 200, retired.text
    assert _order(http, scope_id, entries) == ["alone", "reply"]
