"""A process reads each deferred write's log row once (search/_pending.py): a cold term read asks
only which rows are pending and how long each is, fetches those it has not seen or that an erasure
has rewritten since, and ranks as a store that reads them all does."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pytest

from powercontext_runtime.models import Scope
from powercontext_runtime.search import _pending
from powercontext_runtime.store import memory, scopes
from powercontext_runtime.store.sql_store import SqlStore
from tests.store.writes import QUERIES, WORDS, quiet_database, ranked, small_merges

FETCH = "SELECT generation, doc_key, added FROM search_log"


@pytest.fixture
def pending_store(
    request: pytest.FixtureRequest, backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Callable[[], tuple[SqlStore, list[str]]]:
    """Makes a store whose Scope `s:1` holds four batches of six, all deferred and none merged,
    and gives the entry ids of the first batch with it (made when called: a test may set
    `_pending.MAX_BYTES` first)."""

    def made() -> tuple[SqlStore, list[str]]:
        small_merges(monkeypatch, 10_000)  # batches of 2 or more defer; no merge comes due
        store = SqlStore(quiet_database(request, backend, tmp_path, monkeypatch))
        store.run(scopes.create_scope, Scope("s:1", "", "", (), 1))
        rng = random.Random(4)
        first: list[str] = []
        for _ in range(4):
            texts = [" ".join(rng.choices(WORDS[:5], k=rng.randint(3, 7))) for _ in range(6)]
            cited = store.run(memory.remember_batch, "s:1", [(t, "fact", None) for t in texts], None)
            first = first or [citation.entry_id for citation, _ in cited]
        return store, first

    return made


def fetches(statements: list[str]) -> int:
    return len([sql for sql in statements if sql.startswith(FETCH) and "generation IN (" in sql])


def test_a_process_fetches_each_pending_row_once_and_again_once_an_erasure_rewrote_it(
    pending_store: Callable[[], tuple[SqlStore, list[str]]], statements: list[str]
) -> None:
    store, first = pending_store()
    statements.clear()
    assert ranked(store, ["alpha"])[0]
    assert fetches(statements) == 1  # the four rows, in one statement
    statements.clear()
    assert ranked(store, ["beta gamma"])[0]  # words not read before: only the list is asked for
    assert fetches(statements) == 0
    assert [sql for sql in statements if "length(l.added)" in sql]

    store.run(memory.erase_memory_entry, "s:1", first[0])  # rewrites the first batch's row
    statements.clear()
    assert ranked(store, ["delta"])[0]
    assert fetches(statements) == 1
    fresh = SqlStore(store._backend)
    assert ranked(store, QUERIES) == ranked(fresh, QUERIES)
    fresh.close()
    store.close()


def test_rows_over_the_budget_are_read_for_every_query_and_rank_the_same(
    pending_store: Callable[[], tuple[SqlStore, list[str]]],
    statements: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_pending, "MAX_BYTES", 0)
    store, _ = pending_store()
    statements.clear()
    held_none = ranked(store, ["alpha", "beta gamma"])
    assert fetches(statements) == 2
    monkeypatch.setattr(_pending, "MAX_BYTES", 2**20)
    assert ranked(SqlStore(store._backend), ["alpha", "beta gamma"]) == held_none
    store.close()
