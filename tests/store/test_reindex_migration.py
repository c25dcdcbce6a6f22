"""Migration 5 indexes every head again with today's terms (normalised, stemmed), on both backends."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from devtools.seekdb import SeekdbServer
from powercontext_runtime import backend_for
from powercontext_runtime.models import ExperienceFields, Scope
from powercontext_runtime.recall import document_terms, parse_query
from powercontext_runtime.store.sql_store import SqlStore


def database_url(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    if backend == "oceanbase":
        seekdb: SeekdbServer = request.getfixturevalue("seekdb")
        return seekdb.new_database_url()
    return f"sqlite:///{tmp_path / 'db.sqlite3'}"


def postings(url: str) -> Counter[tuple[str, str]]:
    backend = backend_for(url)
    conn = backend.connect()
    try:
        return Counter(
            {
                (family, term): tf
                for family, term, tf in conn.execute("SELECT family, term, tf FROM search_postings")
            }
        )
    finally:
        backend.close(conn)
        backend.stop()


def make_old(url: str) -> None:
    """Turn the index into what version 4 wrote (lower-cased, unstemmed words) and forget 5."""
    backend = backend_for(url)
    conn = backend.connect()
    try:
        backend.begin(conn, True)
        conn.execute("UPDATE search_postings SET term = 'releases' WHERE term = 'releas'")
        conn.execute("DELETE FROM schema_migrations WHERE version = 5")
        backend.commit(conn)
    finally:
        backend.close(conn)
        backend.stop()


@pytest.mark.parametrize("backend", ["sqlite", "oceanbase"])
def test_an_upgraded_store_is_indexed_as_a_new_one_would_be(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = database_url(backend, tmp_path, request)
    store = SqlStore(backend_for(url))
    store.create_scope(Scope("s:1", "", "", (), 1))
    store.remember("s:1", "Releases ship on Fridays", "fact", None)
    store.remember("s:1", "ＡＰＩ keys rotate", "fact", None)
    store.propose("s:1", "experience", None, ExperienceFields("Releases slipped", "a", "o", "l"))
    candidate = store.list_candidates("s:1", "pending", 0, 5)[0][1]
    store.decide_candidate("s:1", candidate.candidate_id, candidate.version, True)
    expected = postings(url)
    store.close()

    make_old(url)
    assert postings(url) != expected
    upgraded = SqlStore(backend_for(url))
    try:
        assert postings(url) == expected
        texts = [h.text for h in upgraded.search_memory(["s:1"], parse_query("release"), 5)[0]]
        assert texts == ["Releases ship on Fridays"]
        assert [h.text for h in upgraded.search_memory(["s:1"], parse_query("api"), 5)[0]] == [
            "ＡＰＩ keys rotate"
        ]
        assert len(upgraded.search_experience(["s:1"], parse_query("released"), 5)[0]) == 1
    finally:
        upgraded.close()
    assert expected[("memory", "releas")] == 1 and sum(document_terms("ＡＰＩ").values()) == 1
