"""A process reads each deferred write's log row once (search/_pending.py): a cold term read asks
only which rows are pending and how long each is, fetches those it has not seen or that an erasure
has rewritten since, and ranks as a store that reads them all does."""

from __future__ import annotations

import random
import sqlite3
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


def test_a_cold_read_looks_up_the_log_only_by_the_pending_generations(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    statements: list[str],
) -> None:
    """The log keeps every write's row for mirrors to replay, so a statement that led with it by
    Scope and family read them all on every cold term read (at 10k entries just written, the first
    prepares took twice as long). Every statement of a cold read that reads the log must reach it
    by generation."""
    small_merges(monkeypatch, 10_000)
    backend = quiet_database(request, "sqlite", tmp_path, monkeypatch)
    store = SqlStore(backend)
    store.run(scopes.create_scope, Scope("s:1", "", "", (), 1))
    for text in ["alpha beta", "gamma heron", "the delta"]:
        citation = store.run(memory.remember, "s:1", text, "fact", None).citation
        store.run(memory.erase_memory_entry, "s:1", citation.entry_id)  # a removal's row, added NULL
    store.run(memory.remember_batch, "s:1", [("alpha gamma", "fact", None), ("beta the", "fact", None)], None)
    statements.clear()
    assert ranked(store, ["alpha"])[0]
    reads = [sql for sql in statements if "search_log" in sql]
    assert reads
    conn = sqlite3.connect(tmp_path / "db.sqlite3")
    try:
        for sql in reads:
            plan = conn.execute(f"EXPLAIN QUERY PLAN {sql}", [0] * sql.count("?")).fetchall()
            steps = [str(row[-1]).split() for row in plan]  # SCAN or SEARCH, then the table
            on_log = [" ".join(step) for step in steps if step[1] in ("search_log", "l")]
            assert on_log and all("generation" in step for step in on_log), (sql, plan)
    finally:
        conn.close()
    store.close()
