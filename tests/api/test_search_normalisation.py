"""Search and prepare meet a word in any of its written forms (issue 13), on both backends."""

from __future__ import annotations

import httpx
import pytest

from .helpers import new_scope, prepare, remember


@pytest.mark.parametrize(
    ("stored", "query"),
    [
        ("Our release notes live in the wiki.", "where are the releases noted?"),
        ("The café on the corner opens at 7.", "cafe\u0301"),
        ("Rotate the ＡＰＩ keys monthly.", "API keys"),
        ("Every ﬁle needs an owner.", "file owner"),
        ("The office is on Hauptstraße.", "HAUPTSTRASSE"),
    ],
)
def test_search_finds_a_word_written_another_way(http: httpx.Client, stored: str, query: str) -> None:
    scope_id = new_scope(http)
    remember(http, scope_id, "An unrelated remark about lunch.")
    entry = remember(http, scope_id, stored)
    hits = http.post("/v1/memory/search", json={"scope_id": scope_id, "query": query}).json()["hits"]
    assert [h["citation"] for h in hits] == [entry["citation"]]
    body = prepare(http, scope_id, query, assembly={"sections": [{"family": "memory", "limit": 1}]})
    assert entry["citation"]["entry_id"] in body["content"]


def test_stop_words_alone_do_not_match_everything(http: httpx.Client) -> None:
    scope_id = new_scope(http)
    remember(http, scope_id, "It is what it is.")
    wanted = remember(http, scope_id, "The deploy key rotates weekly.")
    hits = http.post(
        "/v1/memory/search", json={"scope_id": scope_id, "query": "what is the deploy key?"}
    ).json()
    assert [h["citation"] for h in hits["hits"]] == [wanted["citation"]]
