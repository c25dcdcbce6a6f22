"""SQLite's write-ahead log is copied back into the database off the request path.

Rule (durability, existing-runtime storage): acknowledged writes stay readable; the database file
itself receives them soon after, while the store stays open, and closing leaves nothing behind.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from powercontext_runtime.models import Scope
from powercontext_runtime.store import memory, scopes
from powercontext_runtime.store.backends import SqliteBackend
from powercontext_runtime.store.sql_store import SqlStore
from powercontext_runtime.store.sqlite_checkpoint import RESTART_AT_BYTES


def test_writes_reach_the_database_file_while_the_store_is_open(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite3"
    store = SqlStore(SqliteBackend(str(db)))
    store.run(scopes.create_scope, Scope("s:1", "", "", (), 1))
    size_before = db.stat().st_size
    for i in range(300):
        store.run(
            memory.remember, "s:1", f"entry {i} about the checkpoint thread and its pages", "fact", None
        )
    deadline = time.monotonic() + 5
    while db.stat().st_size <= size_before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert db.stat().st_size > size_before  # no automatic checkpoint fires this early (16k pages)
    store.close()
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT COUNT(*) FROM memory_entries").fetchone()[0] == 300
    conn.close()


def test_closing_stops_the_thread_and_a_reopened_store_reads_everything(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite3"
    store = SqlStore(SqliteBackend(str(db)))
    store.run(scopes.create_scope, Scope("s:1", "", "", (), 1))
    store.run(memory.remember, "s:1", "kept across a restart", "fact", None)
    store.close()
    reopened = SqlStore(SqliteBackend(str(db)))
    assert [e.text for _, e in reopened.run(memory.list_memory_entries, "s:1", 0, 10)] == [
        "kept across a restart"
    ]
    reopened.close()


def test_a_steady_stream_of_writes_has_its_log_started_over(tmp_path: Path) -> None:
    """With no reader at all, the next commit landed while each PASSIVE checkpoint copied, so
    SQLite never started the log over by itself, and only its automatic checkpoint (64 MiB)
    would have. The thread's restarting checkpoint keeps the log under RESTART_AT_BYTES plus
    what is written between two checkpoints: a few hundred remembers a second (paced, as a
    busy client sends them) write some 15 MiB in that time."""
    db = tmp_path / "db.sqlite3"
    wal = Path(f"{db}-wal")
    store = SqlStore(SqliteBackend(str(db)))
    store.run(scopes.create_scope, Scope("s:1", "", "", (), 1))
    largest = 0
    for i in range(2000):  # some 190 MiB of log frames in all
        text = f"entry {i}: the checkpoint thread copies page {i % 97} of term t{i % 31} back"
        store.run(memory.remember, "s:1", text, "fact", None)
        largest = max(largest, wal.stat().st_size)
        time.sleep(0.002)
    store.close()
    assert largest <= RESTART_AT_BYTES + 32 * 2**20, largest
    assert not wal.exists() or wal.stat().st_size == 0  # closing truncates it
