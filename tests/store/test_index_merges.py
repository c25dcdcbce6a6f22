"""Index merges run off the request path, in bounded memory, on both backends (issue 37, item 1).

A batch whose write makes a merge due returns with its postings still waiting in the log, searches
rank the same before and after the merger thread has merged them, and merging several runs of
CJK text (character pairs: a vocabulary of about a hundred thousand terms) holds a bounded chunk
of them at a time instead of all.
"""

from __future__ import annotations

import random
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest

from powercontext_runtime import backend_for
from powercontext_runtime.models import Scope
from powercontext_runtime.search import IndexMerger, _limits, parse_query
from powercontext_runtime.store import memory, scopes
from powercontext_runtime.store.backends import Backend
from powercontext_runtime.store.sql_store import SqlStore
from tests.conftest import database_env
from tests.store.writes import ranked, small_merges

QUERIES = ["heron 记忆", "系统 alpha", "记忆系统", "beta gamma"]
WORDS = ["heron", "alpha", "beta", "gamma", "记忆", "系统", "合并", "索引"]


@pytest.fixture
def store_backend(request: pytest.FixtureRequest, backend: str, tmp_path: Path) -> Backend:
    env = database_env(request, backend)
    return backend_for(env.get("POWERCONTEXT_SERVER_DATABASE_URL", f"sqlite:///{tmp_path / 'db.sqlite3'}"))


def counts(backend: Backend) -> dict[str, int]:
    """Rows of the index's merge bookkeeping, read on a connection of the test's own."""
    conn = backend.connect()
    try:
        backend.begin(conn, write=False)
        found = {
            table: int(conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])
            for table in ("search_pending", "search_runs", "search_merges")
        }
        backend.commit(conn)
        return found
    finally:
        backend.close(conn)


def test_a_batch_that_makes_a_merge_due_returns_before_the_merge_and_ranks_the_same_after(
    store_backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    small_merges(monkeypatch, 8, chunk_rows=4)
    rng = random.Random(3)
    with monkeypatch.context() as held:  # the merger thread stays idle: it never hears of a write
        held.setattr(IndexMerger, "nudge", lambda self: None)
        store = SqlStore(store_backend)
        store.run(scopes.create_scope, Scope("s:1", "", "", (), 1))
        for _ in range(2):  # the second batch brings the waiting documents to 8
            texts = [" ".join(rng.choices(WORDS, k=rng.randint(2, 7))) for _ in range(4)]
            store.run(memory.remember_batch, "s:1", [(text, "fact", None) for text in texts], None)
        # The batch that made the merge due has its answer, and nothing was merged in it.
        assert counts(store_backend) == {"search_pending": 2, "search_runs": 0, "search_merges": 0}
        before = ranked(store, QUERIES)
        assert all(before), before
    # A store opening on the database carries due merges on, on its merger thread.
    reopened = SqlStore(store_backend)
    deadline = time.monotonic() + 120
    while counts(store_backend)["search_pending"] and time.monotonic() < deadline:
        time.sleep(0.05)
    after = counts(store_backend)
    assert after["search_pending"] == 0 and after["search_runs"] > 0 and after["search_merges"] == 0, after
    assert ranked(store, QUERIES) == before
    assert ranked(reopened, QUERIES) == before
    store.close()
    reopened.close()


def cjk(rng: random.Random, chars: int) -> str:
    return "".join(chr(rng.randint(0x4E00, 0x9FFF)) for _ in range(chars))


@pytest.fixture
def cjk_runs(store_backend: Backend, monkeypatch: pytest.MonkeyPatch) -> Iterator[SqlStore]:
    """A Scope whose CJK batches merged into RUN_FANOUT runs of one size class, their own merge
    due: about 94,000 index rows, nearly all character pairs found once (several chunks' worth)."""
    monkeypatch.setattr(_limits, "DEFER_DOCUMENTS", 2)
    monkeypatch.setattr(_limits, "MERGE_DOCUMENTS", 128)
    monkeypatch.setattr(IndexMerger, "nudge", lambda self: None)  # merges only when the test says
    store = SqlStore(store_backend)
    store.run(scopes.create_scope, Scope("s:1", "", "", (), 1))
    rng = random.Random(37)
    fanout = _limits.RUN_FANOUT
    monkeypatch.setattr(_limits, "RUN_FANOUT", fanout + 1)  # the runs wait for the test
    for _ in range(fanout):
        store.run(memory.remember_batch, "s:1", [(cjk(rng, 50), "fact", None) for _ in range(128)], None)
        store.merge_index()
    monkeypatch.setattr(_limits, "RUN_FANOUT", fanout)
    yield store
    store.close()


def test_merging_runs_of_cjk_text_holds_a_bounded_chunk_at_a_time(
    cjk_runs: SqlStore, store_backend: Backend
) -> None:
    """Eight runs of 128 short CJK texts hold some 94,000 rows, nearly six chunks; reading them all
    at once takes over 37 MiB (and over 100 MiB for texts four times as long), a merge in chunks of
    CHUNK_ROWS rows 7 to 9 MiB, whatever the runs' size. The corpus stays small because merging
    it under tracemalloc is slow (some 30 s on OceanBase at four times the size)."""
    assert counts(store_backend)["search_runs"] > 75_000
    probe = cjk_runs.search_memory(["s:1"], parse_query(cjk(random.Random(37), 50)[:2]), 5)
    tracemalloc.start()
    try:
        steps = cjk_runs.merge_index()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert steps > 2  # the runs merged over several transactions
    assert peak < 16 * 2**20, peak
    assert counts(store_backend)["search_merges"] == 0
    assert cjk_runs.search_memory(["s:1"], parse_query(cjk(random.Random(37), 50)[:2]), 5) == probe


def test_the_merger_pauses_between_chunks_only_where_writers_are_not_queued(
    store_backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite's busy handler lets another process's writer lose every race to the next chunk, so
    there the merger leaves the lock free after each chunk; OceanBase queues a waiting writer on
    the row lock, and a pause would only slow the merge."""
    small_merges(monkeypatch, 8, chunk_rows=4)
    monkeypatch.setattr(IndexMerger, "nudge", lambda self: None)  # merges only when the test says
    store = SqlStore(store_backend)
    store.run(scopes.create_scope, Scope("s:1", "", "", (), 1))
    rng = random.Random(5)
    for _ in range(2):
        texts = [" ".join(rng.choices(WORDS, k=rng.randint(2, 7))) for _ in range(4)]
        store.run(memory.remember_batch, "s:1", [(text, "fact", None) for text in texts], None)
    pauses: list[float] = []
    chunks = store.merge_index(pause=pauses.append)
    store.close()
    assert chunks > 1
    if store_backend.name == "sqlite":
        assert len(pauses) == chunks and all(0 <= p <= store_backend.merge_pause_max_s for p in pauses)
    else:
        assert pauses == []
