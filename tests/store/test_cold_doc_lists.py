"""A fresh process ranks a large Scope after reading its documents as a few packed rows, not a row
per document, and ranks exactly as one that read them all (issue 34, item 2), on both backends.

The index merger keeps a list of each large family's documents (`search_doc_lists`); a cold mirror
loads it and applies the log written since. Work is asserted, not time: the statements a fresh
store's first search sends and the rows they name.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import cast

import pytest

from powercontext_runtime.models import MemoryCitation, Scope
from powercontext_runtime.search import _doclists, _limits, _transactions
from powercontext_runtime.search._postings import unpack_postings
from powercontext_runtime.store import memory, scopes
from powercontext_runtime.store.backends import Backend
from powercontext_runtime.store.sql_store import SqlStore
from tests.store.writes import QUERIES, WORDS, churn, query, quiet_database, ranked, small_merges


@pytest.fixture
def db(
    request: pytest.FixtureRequest, backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Backend:
    """A fresh database whose families keep a list from 16 documents, in rows of 8, relisted
    every 12 generations; the merger thread idle (the test merges when it means to)."""
    monkeypatch.setattr(_doclists, "LIST_DOCUMENTS", 16)
    monkeypatch.setattr(_doclists, "LIST_CHUNK", 8)
    monkeypatch.setattr(_doclists, "LIST_EVERY", 12)
    return quiet_database(request, backend, tmp_path, monkeypatch)


def ranks_as_a_whole_read(db: Backend, statements: list[str]) -> list[str]:
    """The statements a fresh store sent to rank QUERIES, after checking that it read no row per
    document and ranked as a store that reads every `search_docs` row (the lists dropped)."""
    statements.clear()
    cold = SqlStore(db)
    cold_ranked = ranked(cold, QUERIES)
    sent = list(statements)
    assert not [sql for sql in sent if "search_docs" in sql]
    cold.close()
    query(db, "DELETE FROM search_doc_lists")
    assert ranked(SqlStore(db), QUERIES) == cold_ranked
    return sent


def written(backend: Backend, seed: int, batches: int) -> tuple[SqlStore, list[MemoryCitation]]:
    rng = random.Random(seed)
    store = SqlStore(backend)
    store.run(scopes.create_scope, Scope("s:1", "", "", (), 1))
    live: list[MemoryCitation] = []
    for _ in range(batches):
        texts = [" ".join(rng.choices(WORDS, k=rng.randint(2, 7))) for _ in range(6)]
        live.extend(
            c for c, _ in store.run(memory.remember_batch, "s:1", [(t, "fact", None) for t in texts], None)
        )
    return store, live


def test_a_fresh_store_reads_the_list_and_the_log_not_a_row_per_document_and_ranks_the_same(
    db: Backend, statements: list[str]
) -> None:
    store, live = written(db, 1, 8)  # 48 documents
    store.merge_index()  # lists them: 48 documents in 6 rows
    assert query(db, "SELECT COUNT(*), COUNT(DISTINCT generation) FROM search_doc_lists") == [(6, 1)]
    # Changes after the list (fewer than LIST_EVERY generations: it stays as it is), replayed from the log.
    rng = random.Random(2)
    store.run(memory.remember, "s:1", "heron alpha the", "fact", None)
    store.run(memory.revise_memory_entry, "s:1", live.pop(rng.randrange(len(live))), "gamma heron")
    store.run(memory.retire_memory_entry, "s:1", live.pop(rng.randrange(len(live))))
    store.run(memory.erase_memory_entry, "s:1", live.pop(rng.randrange(len(live))).entry_id)
    store.merge_index()
    assert query(db, "SELECT COUNT(*), COUNT(DISTINCT generation) FROM search_doc_lists") == [(6, 1)]
    store.close()

    statements.clear()
    cold = SqlStore(db)
    first = ranked(cold, QUERIES)
    assert not [sql for sql in statements if "search_docs" in sql]
    assert len([sql for sql in statements if "search_doc_lists" in sql]) == 1
    cold.close()

    query(db, "DELETE FROM search_doc_lists")  # the way before lists: every search_docs row
    whole = SqlStore(db)
    assert ranked(whole, QUERIES) == first
    assert all(first[:4]), first
    whole.close()


def test_lists_kept_through_churn_equal_the_documents_table(
    db: Backend, statements: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_doclists, "LIST_EVERY", 1)  # every merger run relists
    store, live = written(db, 3, 3)
    rng = random.Random(4)
    for _ in range(6):
        churn(store, rng, live, 10, WORDS)
        store.merge_index()
        generation = query(db, "SELECT generation FROM search_stats WHERE family = 'memory'")[0][0]
        assert query(db, "SELECT DISTINCT generation FROM search_doc_lists") == [(generation,)]
        listed = [
            unpack_postings(int(cast(int, base)), cast(bytes, packed))
            for base, packed in query(db, "SELECT base, docs FROM search_doc_lists ORDER BY base")
        ]
        assert all(len(keys) <= 8 for keys, _ in listed)
        held = [
            (key, length)
            for keys, lengths in listed
            for key, length in zip(keys.tolist(), lengths.tolist(), strict=True)
        ]
        rows = query(db, "SELECT doc_key, length FROM search_docs WHERE family = 'memory'")
        assert held == sorted((int(cast(int, key)), int(cast(int, length))) for key, length in rows)
    statements.clear()
    cold = SqlStore(db)
    cold_ranked = ranked(cold, QUERIES)
    assert not [sql for sql in statements if "search_docs" in sql]
    query(db, "DELETE FROM search_doc_lists")
    assert ranked(SqlStore(db), QUERIES) == cold_ranked


def test_the_log_keeps_what_a_list_is_brought_up_to_date_from(
    db: Backend, statements: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """However far a list falls behind (the merger thread came to it late), the log rows after it
    stay: bringing it up to date, and a fresh reader, replay them instead of reading every
    document again."""
    monkeypatch.setattr(_limits, "LOG_RETAIN", 8)
    monkeypatch.setattr(_limits, "PRUNE_EVERY", 4)
    store, _ = written(db, 7, 4)
    store.merge_index()  # lists the 24 documents
    listed = query(db, "SELECT MIN(generation) FROM search_doc_lists")[0][0]
    for n in range(30):  # one generation each, past LOG_RETAIN several times; nobody relists
        store.run(memory.remember, "s:1", f"heron {n} alpha", "fact", None)
    store.close()
    assert query(db, "SELECT MIN(generation) FROM search_doc_lists")[0][0] == listed
    ranks_as_a_whole_read(db, statements)


def test_an_erased_scope_leaves_no_list(db: Backend) -> None:
    store, _ = written(db, 5, 4)
    store.merge_index()
    assert query(db, "SELECT COUNT(*) FROM search_doc_lists") == [(3,)]
    store.run(scopes.delete_scope, "s:1")
    assert query(db, "SELECT COUNT(*) FROM search_doc_lists") == [(0,)]


def test_the_migration_lists_the_families_of_an_existing_database(db: Backend) -> None:
    store, _ = written(db, 6, 4)
    store.close()
    query(db, "DROP TABLE search_doc_lists")
    query(db, "DELETE FROM schema_migrations WHERE version = 13")
    reopened = SqlStore(db)
    assert query(db, "SELECT COUNT(*) FROM search_doc_lists") == [(3,)]
    reopened.close()


@pytest.mark.parametrize("head", [_doclists.DOCUMENTS_HEAD, 40], ids=["as-shipped", "40-bytes"])
def test_a_list_behind_by_batches_reads_their_documents_not_their_postings(
    db: Backend, statements: list[str], monkeypatch: pytest.MonkeyPatch, head: int
) -> None:
    """A fresh reader brings a list up to date from only the front of each log row, where the
    row's documents are; a row whose documents do not fit there (here: more than 3 when only 40
    bytes are read) is read again whole. Either way it ranks as one that read every document."""
    monkeypatch.setattr(_doclists, "DOCUMENTS_HEAD", head)
    store, _ = written(db, 8, 3)
    store.merge_index()  # lists the 18 documents
    listed = query(db, "SELECT MIN(generation) FROM search_doc_lists")[0][0]
    rng = random.Random(9)
    for _ in range(4):  # batches of 6 after the list, which stays where it is
        texts = [" ".join(rng.choices(WORDS, k=rng.randint(2, 7))) for _ in range(6)]
        store.run(memory.remember_batch, "s:1", [(t, "fact", None) for t in texts], None)
    store.run(memory.remember, "s:1", "heron alpha", "fact", None)  # a row of one document
    store.close()
    assert query(db, "SELECT MIN(generation) FROM search_doc_lists")[0][0] == listed
    sent = ranks_as_a_whole_read(db, statements)
    assert [sql for sql in sent if "substr(added, 1, ?)" in sql]  # the fronts of the rows
    whole_rows = [sql for sql in sent if sql.startswith("SELECT added FROM search_log")]
    assert len(whole_rows) == (4 if head == 40 else 0)  # the 4 batches, when 40 bytes cannot hold them


def test_a_merger_busy_with_merges_keeps_the_lists_up_to_date(
    db: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long ingest makes one merge due after another, so the merger may never run out of merges
    before it is stopped. It brings the lists up to date between merge chunks all the same (every
    RELIST_EVERY_S; here after every chunk): a list left behind would keep the log from being
    pruned, and a fresh reader would replay every row since."""
    small_merges(monkeypatch, 8, chunk_rows=2, chunk_postings=3)
    monkeypatch.setattr(_transactions, "RELIST_EVERY_S", 0.0)
    store, _ = written(db, 5, 6)  # 36 documents, deferred: a merge of many chunks is due
    asked = [0]

    def stopping() -> bool:  # the process stops a few chunks in
        asked[0] += 1
        return asked[0] > 4

    assert store.merge_index(stopping) >= 1
    assert query(db, "SELECT COUNT(*) FROM search_merges") == [(1,)]  # cut short mid-merge
    generation = query(db, "SELECT generation FROM search_stats WHERE family = 'memory'")[0][0]
    assert query(db, "SELECT MIN(generation), MAX(generation) FROM search_doc_lists") == [
        (generation, generation)
    ]
    store.close()
