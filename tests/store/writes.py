"""Random Memory writes for index tests: remember (alone and in batches), revise, retire and
erase in one Scope, with index merges carried on a chunk or two at a time in between (so writes
meet merges half done)."""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence
from pathlib import Path

import pytest

from powercontext_runtime import backend_for
from powercontext_runtime.models import MemoryCitation
from powercontext_runtime.search import IndexMerger, _limits, _merge, parse_query
from powercontext_runtime.store import memory
from powercontext_runtime.store.backends import Backend
from powercontext_runtime.store.sql_store import SqlStore
from tests.conftest import database_env

# A few words, English and Chinese, so that texts share terms and queries have common words.
WORDS = ["alpha", "beta", "gamma", "delta", "heron", "记忆", "系统", "the", "a"]
QUERIES = ["alpha beta", "the heron", "记忆系统", "gamma delta a", "zeta"]


def quiet_database(
    request: pytest.FixtureRequest, backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Backend:
    """A fresh database on `backend` whose merger thread stays idle (a test merges when it means to)."""
    monkeypatch.setattr(IndexMerger, "nudge", lambda self: None)
    env = database_env(request, backend)
    return backend_for(env.get("POWERCONTEXT_SERVER_DATABASE_URL", f"sqlite:///{tmp_path / 'db.sqlite3'}"))


def churn(
    store: SqlStore, rng: random.Random, live: list[MemoryCitation], steps: int, words: Sequence[str]
) -> None:
    """`steps` writes to Scope `s:1`; `live` holds the citations of the current heads."""
    for _ in range(steps):
        action = rng.random()
        text = " ".join(rng.choice(words) for _ in range(rng.randint(1, 8)))
        if action < 0.4 or not live:
            live.append(store.run(memory.remember, "s:1", text, "fact", None).citation)
        elif action < 0.55:  # one index segment for several documents, later taken apart one by one
            texts = [
                " ".join(rng.choice(words) for _ in range(rng.randint(1, 8)))
                for _ in range(rng.randint(2, 6))
            ]
            cited = store.run(memory.remember_batch, "s:1", [(t, "fact", None) for t in texts], None)
            live.extend(c for c, _ in cited)
        elif action < 0.75:
            old = live.pop(rng.randrange(len(live)))
            live.append(store.run(memory.revise_memory_entry, "s:1", old, text).citation)
        elif action < 0.9:
            store.run(memory.retire_memory_entry, "s:1", live.pop(rng.randrange(len(live))))
        else:
            store.run(memory.erase_memory_entry, "s:1", live.pop(rng.randrange(len(live))).entry_id)
        merge_some(store, rng.randint(0, 2))


def merge_some(store: SqlStore, steps: int) -> None:
    """Carry due index merges on by at most `steps` chunks (a transaction each)."""
    taken = itertools.count()
    store.merge_index(lambda: next(taken) >= steps)


def small_merges(
    monkeypatch: pytest.MonkeyPatch,
    merge_documents: int,
    fanout: int = 2,
    chunk_rows: int = 5,
    chunk_postings: int = 7,
) -> None:
    """Deferred writes from 2 documents, merged every `merge_documents`, `fanout` runs into one, in
    chunks of a few rows and postings: a handful of writes goes through every path of a merge."""
    monkeypatch.setattr(_limits, "DEFER_DOCUMENTS", 2)
    monkeypatch.setattr(_limits, "MERGE_DOCUMENTS", merge_documents)
    monkeypatch.setattr(_limits, "RUN_FANOUT", fanout)
    monkeypatch.setattr(_merge, "CHUNK_ROWS", chunk_rows)
    monkeypatch.setattr(_merge, "CHUNK_POSTINGS", chunk_postings)


def ranked(store: SqlStore, queries: Sequence[str]) -> list[list[tuple[str, float]]]:
    """Each query's best ten Memory hits in Scope `s:1`, as (text, score) pairs."""
    return [
        [(hit.text, round(hit.score, 9)) for hit in store.search_memory(["s:1"], parse_query(q), 10)[0]]
        for q in queries
    ]


def query(backend: Backend, sql: str, params: Sequence[object] = ()) -> list[tuple[object, ...]]:
    conn = backend.connect()
    try:
        backend.begin(conn, write=True)
        rows = [tuple(row) for row in conn.execute(sql, params).fetchall()]
        backend.commit(conn)
        return rows
    finally:
        backend.close(conn)
