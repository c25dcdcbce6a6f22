"""Bounded memory: a server that has served more does not hold more (docs/benchmarks.md, Memory).

`make bench-memory` found the server's RSS growing without end under a constant load, by about
27 MiB every 40 s, for two reasons, each checked here in process in well under a second:

- the search mirror kept the postings of every term ever queried, also of terms no entry holds
  (about 500 bytes each), and its budget counted such a term as one posting of 16 bytes, so under
  queries that keep bringing new words it never evicted anything;
- each thread of the server's pool opened its own database connection, which stayed open after
  the pool ended the thread (after 10 s idle): every burst of requests after a pause opened more.

Both are fixed in the store: the mirror keeps only terms with enough postings, counts what a
term and a document really cost, and forgets terms before whole mirrors; a new connection closes
those of threads that ended.
"""

from __future__ import annotations

import os
import random
import sys
import threading
import tracemalloc
from pathlib import Path

import pytest

from powercontext_api.models import MemorySearchRequest, RememberRequest, ScopeCreateRequest
from powercontext_runtime import ConfigurationError, Settings, open_application, open_store
from powercontext_runtime.store.sql_store import SqlStore

# CJK words: indexed as characters and pairs, never stemmed (the stemmer keeps a cache of its own,
# bounded at 10,000 words, which would hide what the mirror keeps).
HAN = [chr(code) for code in range(0x4E00, 0x9FA6)]


def test_new_query_terms_do_not_accumulate_in_the_search_mirror(tmp_path: Path) -> None:
    app = open_application(Settings(database_url=f"sqlite:///{tmp_path / 'db.sqlite3'}"))
    try:
        app.create_scope(ScopeCreateRequest(scope_id="p"))
        for i in range(40):
            app.remember(RememberRequest(scope_id="p", text=f"Note {i}: the heron came back to the lake."))
        rng = random.Random(7)

        def queries(count: int) -> None:  # each with four words no entry holds, new ones every time
            for _ in range(count):
                words = " ".join(rng.choice(HAN) + rng.choice(HAN) for _ in range(4))
                app.search_memory(MemorySearchRequest(scope_id="p", query=f"heron {words}"))

        tracemalloc.start()
        try:
            queries(200)
            before = tracemalloc.get_traced_memory()[0]
            queries(600)
            grown = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
    finally:
        app.close()
    assert grown < 100_000  # keeping their 6,500 or so new terms (pairs, characters) took 2 MB


def _open_files(path: Path) -> int:
    count = 0
    for fd in Path("/proc/self/fd").iterdir():
        try:
            if os.readlink(fd) == str(path):
                count += 1
        except OSError:
            continue
    return count


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts open files in /proc")
def test_a_thread_that_ended_leaves_no_database_connection_open(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite3"
    store = open_store(f"sqlite:///{db}")
    try:
        for _ in range(20):  # as the server's pool does: a thread per burst, ended when idle
            thread = threading.Thread(target=store.ping)
            thread.start()
            thread.join()
        open_now = _open_files(db)
    finally:
        store.close()
    assert open_now <= 4  # not one per thread (this thread's, the last one's, the WAL checkpointer's)


def test_the_search_mirror_budget_is_a_setting(tmp_path: Path) -> None:
    env = {"POWERCONTEXT_SERVER_DATA_DIR": str(tmp_path)}
    assert Settings.from_env(env).search_cache_mb is None  # the mirror's own default
    settings = Settings.from_env(env | {"POWERCONTEXT_SERVER_SEARCH_CACHE_MB": "64"})
    assert settings.search_cache_mb == 64
    for bad in ("0", "-1", "64MB"):
        with pytest.raises(ConfigurationError, match="POWERCONTEXT_SERVER_SEARCH_CACHE_MB"):
            Settings.from_env(env | {"POWERCONTEXT_SERVER_SEARCH_CACHE_MB": bad})
    store = open_store(settings.database_url, settings.search_cache_mb)
    try:
        assert isinstance(store, SqlStore)
        assert store._search._max_postings == 64 * 2**20 // 16  # postings of about 16 bytes
    finally:
        store.close()
