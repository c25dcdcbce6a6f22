"""Copies SQLite's write-ahead log back into the database on a thread of its own.

With SQLite's automatic checkpoint the commit that crosses the threshold does the copying, so one
write in every few pays for the pages of many, on the request's thread. Here a write commit only
nudges; a background thread waits a moment so that pages dirtied again and again (the index's
busiest terms) are copied once, then checkpoints PASSIVE, which never blocks readers or writers.
Connections keep a high automatic threshold as a backstop should the thread fall behind.
"""

from __future__ import annotations

import sqlite3
import threading
from contextlib import suppress

AUTOCHECKPOINT_BACKSTOP_PAGES = 16_000  # 64 MiB of 4 KiB pages
COALESCE_SECONDS = 0.2


class WalCheckpointer:
    def __init__(self, path: str, busy_timeout_s: float) -> None:
        self._path = path
        self._busy_timeout_s = busy_timeout_s
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def nudge(self) -> None:
        """A write committed: checkpoint soon (the thread starts with the first write)."""
        with self._lock:
            if self._stopping.is_set():
                return
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="powercontext-wal-checkpoint", daemon=True
                )
                self._thread.start()
        self._wake.set()

    def stop(self) -> None:
        """Checkpoint what is left and end the thread; later nudges do nothing."""
        with self._lock:
            self._stopping.set()
            thread = self._thread
        self._wake.set()
        if thread is not None:
            thread.join(timeout=10)

    def _run(self) -> None:
        conn = sqlite3.connect(self._path, timeout=self._busy_timeout_s, isolation_level=None)
        try:
            while True:
                self._wake.wait()
                self._stopping.wait(COALESCE_SECONDS)  # returns at once when stopping
                self._wake.clear()
                with suppress(sqlite3.Error):  # a busy database is checkpointed next time
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                if self._stopping.is_set():
                    return
        finally:
            conn.close()
