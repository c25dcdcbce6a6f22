"""A store whose search mirror is warm keeps ranking exactly as a fresh store on the same database
while writes keep coming (issue 34), on both backends: each write is replayed into the warm
mirror, whose key table grows in place as entries are appended, and a key SQLite gives again
after an erasure takes a new slot.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from powercontext_runtime.models import MemoryCitation, Scope
from powercontext_runtime.search import SearchMirror
from powercontext_runtime.search._mirror import FamilyMirror
from powercontext_runtime.store import memory, scopes
from powercontext_runtime.store.backends import Backend
from powercontext_runtime.store.sql_store import SqlStore
from tests.store.writes import QUERIES, WORDS, churn, quiet_database, ranked


@pytest.fixture
def db(
    request: pytest.FixtureRequest, backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Backend:
    return quiet_database(request, backend, tmp_path, monkeypatch)


def text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 8)))


def table_length(mirror: FamilyMirror) -> int:
    return 0 if mirror._dense is None else len(mirror._dense[1])


def memory_mirror(search: SearchMirror) -> FamilyMirror:
    return next(mirror for (_, family), mirror in search._mirrors.items() if family == "memory")


def test_a_warm_mirror_taking_writes_ranks_as_a_fresh_store_does(db: Backend) -> None:
    rng = random.Random(34)
    search = SearchMirror()
    store = SqlStore(db, search)
    store.run(scopes.create_scope, Scope("s:1", "", "", (), 1))
    batch = [(text(rng), "fact", None) for _ in range(40)]
    live: list[MemoryCitation] = [c for c, _ in store.run(memory.remember_batch, "s:1", batch, None)]
    ranked(store, QUERIES)  # the first read makes the mirror and its key table
    warm_mirror = memory_mirror(search)
    tables = [table_length(warm_mirror)]
    for step in range(1, 121):
        if step == 110:  # the newest entry erased: SQLite gives its key to the next one
            store.run(memory.erase_memory_entry, "s:1", live.pop().entry_id)
            live.append(store.run(memory.remember, "s:1", text(rng), "fact", None).citation)
        elif step % 10 == 0:  # a revision, a retirement, an erasure or a batch
            churn(store, rng, live, 1, WORDS)
        else:
            live.append(store.run(memory.remember, "s:1", text(rng), "fact", None).citation)
        warm = ranked(store, QUERIES)  # replays this one write
        assert memory_mirror(search) is warm_mirror  # brought up to date, not built again
        tables.append(table_length(warm_mirror))
        if step % 20 == 0 or step == 110:
            fresh = SqlStore(db)
            assert ranked(fresh, QUERIES) == warm, step
            fresh.close()
        assert all(warm[:4]), warm
    store.close()
    # The table was made by the first read and grew in place as entries were appended (on SQLite,
    # until the key given again after the erasure made keys stop ascending).
    assert tables[0] > 0 and max(tables) > tables[0], tables
