"""An erasure's purge truncates SQLite's write-ahead log even while another connection is
checkpointing (the background checkpointer, nudged by the writes before it): SQLite answers
busy at once then, and the erased text stayed in the -wal file (found by the embedding leg's
planted-vector check in CI)."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from powercontext_runtime import backend_for
from powercontext_runtime.models import Scope
from powercontext_runtime.store import memory, scopes
from powercontext_runtime.store.sql_store import SqlStore

MARKER = "purge-marker-5f1c2a"


def test_the_log_is_emptied_after_an_erasure_while_another_connection_checkpoints(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite3"
    store = SqlStore(backend_for(f"sqlite:///{path}"))
    store.run(scopes.create_scope, Scope("s:purge", "", "", (), 1))
    stop = threading.Event()

    def checkpoint_all_along() -> None:
        other = sqlite3.connect(path, isolation_level=None)
        while not stop.is_set():
            other.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        other.close()

    try:
        for round_number in range(20):
            cited = store.run(memory.remember, "s:purge", f"{MARKER} {round_number}", "fact", None).citation
            checkpointer = threading.Thread(target=checkpoint_all_along)
            stop.clear()
            checkpointer.start()
            try:
                store.run(memory.erase_memory_entry, "s:purge", cited.entry_id)
            finally:
                stop.set()
                checkpointer.join()
            wal = path.with_name(path.name + "-wal")
            assert not wal.exists() or f"{MARKER} {round_number}".encode() not in wal.read_bytes()
    finally:
        store.close()
