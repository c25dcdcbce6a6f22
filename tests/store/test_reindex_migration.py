"""An upgraded store's index is what a new one would hold: migration 7 indexes every head again,
with today's terms (normalised, stemmed, since 5) in today's rows (segments, since 7), on both
backends."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from devtools.seekdb import SeekdbServer
from powercontext_runtime import backend_for
from powercontext_runtime.models import ExperienceFields, Scope
from powercontext_runtime.recall import document_terms, parse_query
from powercontext_runtime.store.sql_search import unpack_postings
from powercontext_runtime.store.sql_store import SqlStore


def database_url(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    if backend == "oceanbase":
        seekdb: SeekdbServer = request.getfixturevalue("seekdb")
        return seekdb.new_database_url()
    return f"sqlite:///{tmp_path / 'db.sqlite3'}"


def postings(url: str) -> Counter[tuple[str, str]]:
    """Summed term frequencies by (family, term), however the postings are split into segments."""
    backend = backend_for(url)
    conn = backend.connect()
    try:
        found: Counter[tuple[str, str]] = Counter()
        for family, term, segment, packed in conn.execute(
            "SELECT family, term, segment, postings FROM search_segments"
        ):
            found[(family, term)] += int(unpack_postings(int(segment), packed)[1].sum())
        return found
    finally:
        backend.close(conn)
        backend.stop()


def make_old(url: str) -> None:
    """Turn the database into what version 6 was: postings a row each, with terms as version 4
    wrote them (lower-cased, unstemmed words), and no record of 7."""
    backend = backend_for(url)
    conn = backend.connect()
    try:
        backend.begin(conn, True)
        conn.execute("DROP TABLE search_segments")
        conn.execute("ALTER TABLE search_docs DROP COLUMN segment")
        conn.execute(
            "CREATE TABLE search_postings (scope_key BIGINT NOT NULL, family VARCHAR(32) NOT NULL,"
            " term VARCHAR(256) NOT NULL, doc_key BIGINT NOT NULL, tf BIGINT NOT NULL,"
            " PRIMARY KEY (scope_key, family, term, doc_key))"
        )
        conn.execute("INSERT INTO search_postings VALUES (1, 'memory', 'releases', 1, 1)")
        conn.execute("DELETE FROM schema_migrations WHERE version = 7")
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

    make_old(url)  # no segments at all now: the upgrade must build every one
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
