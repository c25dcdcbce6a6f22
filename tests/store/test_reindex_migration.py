"""An upgraded store's index is what a new one would hold, on both backends: from before 7, every
head is indexed again with today's terms (normalised, stemmed, since 5) in today's rows (segments,
since 7); from 7, the postings stay and only the log changes form (8)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from devtools.seekdb import SeekdbServer
from powercontext_runtime import backend_for
from powercontext_runtime.models import ExperienceFields, Scope
from powercontext_runtime.search import Conn, document_terms, parse_query
from powercontext_runtime.search._limits import LOG_RETAIN
from powercontext_runtime.search._postings import unpack_postings
from powercontext_runtime.store import candidates, memory, scopes
from powercontext_runtime.store.sql_store import SqlStore


def database_url(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    if backend == "oceanbase":
        seekdb: SeekdbServer = request.getfixturevalue("seekdb")
        return seekdb.new_database_url()
    return f"sqlite:///{tmp_path / 'db.sqlite3'}"


def postings(url: str) -> Counter[tuple[str, str]]:
    """Summed term frequencies by (family, term), however the postings are split into segments and
    runs (deferred writes are merged or not alike on both sides)."""
    backend = backend_for(url)
    conn = backend.connect()
    try:
        found: Counter[tuple[str, str]] = Counter()
        for family, term, segment, packed in conn.execute(
            "SELECT family, term, segment, postings FROM search_segments"
            " UNION ALL SELECT family, term, segment, postings FROM search_runs"
        ):
            found[(family, term)] += int(unpack_postings(int(segment), packed)[1].sum())
        return found
    finally:
        backend.close(conn)
        backend.stop()


def old_log(conn: Conn) -> None:
    """The log as versions 4 to 7 kept it: a row per document, its terms as JSON; no deferred
    writes, no runs, no record of 8."""
    for table in ("search_log", "search_pending", "search_runs", "search_run_sizes"):
        conn.execute(f"DROP TABLE {table}")
    conn.execute(
        "CREATE TABLE search_log (scope_key BIGINT NOT NULL, family VARCHAR(32) NOT NULL,"
        " generation BIGINT NOT NULL, doc_key BIGINT NOT NULL, length BIGINT NOT NULL, terms LONGTEXT,"
        " PRIMARY KEY (scope_key, family, generation))"
    )
    conn.execute("INSERT INTO search_log VALUES (1, 'memory', 1, 1, 4, '{\"releas\":1}')")
    conn.execute("DELETE FROM schema_migrations WHERE version = 8")


@contextmanager
def rewritten(url: str) -> Iterator[Conn]:
    """A connection to the database in one write transaction, committed at the end of the block."""
    backend = backend_for(url)
    conn = backend.connect()
    try:
        backend.begin(conn, True)
        yield conn
        backend.commit(conn)
    finally:
        backend.close(conn)
        backend.stop()


def make_old(url: str) -> None:
    """Turn the database into what version 6 was: postings a row each, with terms as version 4
    wrote them (lower-cased, unstemmed words), the old log, and no record of 7 or 8."""
    with rewritten(url) as conn:
        old_log(conn)
        conn.execute("DROP TABLE search_segments")
        conn.execute("ALTER TABLE search_docs DROP COLUMN segment")
        conn.execute(
            "CREATE TABLE search_postings (scope_key BIGINT NOT NULL, family VARCHAR(32) NOT NULL,"
            " term VARCHAR(256) NOT NULL, doc_key BIGINT NOT NULL, tf BIGINT NOT NULL,"
            " PRIMARY KEY (scope_key, family, term, doc_key))"
        )
        conn.execute("INSERT INTO search_postings VALUES (1, 'memory', 'releases', 1, 1)")
        conn.execute("DELETE FROM schema_migrations WHERE version = 7")


@pytest.mark.parametrize("backend", ["sqlite", "oceanbase"])
def test_an_upgraded_store_is_indexed_as_a_new_one_would_be(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = database_url(backend, tmp_path, request)
    store = SqlStore(backend_for(url))
    store.run(scopes.create_scope, Scope("s:1", "", "", (), 1))
    store.run(memory.remember, "s:1", "Releases ship on Fridays", "fact", None)
    store.run(memory.remember, "s:1", "ＡＰＩ keys rotate", "fact", None)
    store.run(
        candidates.propose, "s:1", "experience", None, ExperienceFields("Releases slipped", "a", "o", "l")
    )
    candidate = store.run(candidates.list_candidates, "s:1", "pending", 0, 5)[0][1]
    store.run(candidates.decide_candidate, "s:1", candidate.candidate_id, candidate.version, True)
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


@pytest.mark.parametrize("backend", ["sqlite", "oceanbase"])
def test_from_version_7_the_postings_stay_and_mirrors_rebuild(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = database_url(backend, tmp_path, request)
    store = SqlStore(backend_for(url))
    store.run(scopes.create_scope, Scope("s:1", "", "", (), 1))
    store.run(
        memory.remember_batch,
        "s:1",
        [("Releases ship on Fridays", "fact", None), ("Keys rotate monthly", "fact", None)],
        None,
    )
    expected = postings(url)
    store.close()

    old = backend_for(url)
    conn = old.connect()
    try:
        old.begin(conn, True)
        old_log(conn)
        (generation,) = conn.execute("SELECT generation FROM search_stats WHERE family = 'memory'").fetchone()
        old.commit(conn)
    finally:
        old.close(conn)
        old.stop()
    upgraded = SqlStore(backend_for(url))
    try:
        assert postings(url) == expected
        check = backend_for(url)
        conn = check.connect()
        try:
            assert conn.execute("SELECT COUNT(*) FROM search_log").fetchone()[0] == 0
            (moved,) = conn.execute("SELECT generation FROM search_stats WHERE family = 'memory'").fetchone()
        finally:
            check.close(conn)
            check.stop()
        assert moved > generation + LOG_RETAIN  # no mirror can replay across the change of form
        upgraded.run(memory.remember, "s:1", "Release notes go out on Mondays", "fact", None)
        texts = [h.text for h in upgraded.search_memory(["s:1"], parse_query("release"), 5)[0]]
        assert sorted(texts) == ["Release notes go out on Mondays", "Releases ship on Fridays"]
    finally:
        upgraded.close()
