"""Copies SQLite's write-ahead log back into the database on a thread of its own, and keeps the
log's file bounded.

With SQLite's automatic checkpoint the commit that crosses the threshold does the copying, so one
write in every few pays for the pages of many, on the request's thread. Here a write commit only
nudges; a background thread waits a moment so that pages dirtied again and again (the index's
busiest terms) are copied once, then checkpoints PASSIVE, which never blocks readers or writers.
Connections keep a high automatic threshold as a backstop should the thread fall behind.

A PASSIVE checkpoint never starts the log over while a reader holds a snapshot that needs it, and
under steady reads (prepares overlap) some reader always does: the file grew by gigabytes. So once
the file passes TRUNCATE_AT_BYTES the thread checkpoints TRUNCATE: this process's writes wait
(`before_write`, at most TRUNCATE_WAIT_S) so that it gets the write lock at once instead of losing
every race for it, readers of older snapshots finish meanwhile (new readers read the database file,
every frame being copied), and the file is emptied. Should readers outlast that, it tries again
after the next write. Every connection also sets `journal_size_limit`, so a log that SQLite starts
over is cut back to the ceiling, and stopping truncates the log (closing connections alone leaves
it when another process still has the database open).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from contextlib import suppress

from ..nudged_thread import NudgedThread

AUTOCHECKPOINT_BACKSTOP_PAGES = 16_000  # 64 MiB of 4 KiB pages
COALESCE_SECONDS = 0.2
# The log's file stays under this plus what is written between two checkpoints (COALESCE_SECONDS
# of writes, and the time a truncating checkpoint waits).
WAL_CEILING_BYTES = 64 * 2**20
TRUNCATE_AT_BYTES = 16 * 2**20
TRUNCATE_WAIT_S = 0.25


class WalCheckpointer(NudgedThread):
    def __init__(self, path: str, busy_timeout_s: float) -> None:
        super().__init__("powercontext-wal-checkpoint", COALESCE_SECONDS, join_s=15)
        self._path = path
        self._busy_timeout_s = busy_timeout_s
        self._writes_may_begin = threading.Event()
        self._writes_may_begin.set()
        self._conn: sqlite3.Connection | None = None

    def before_write(self) -> None:
        """A write transaction is about to begin: wait while a truncating checkpoint runs."""
        self._writes_may_begin.wait(TRUNCATE_WAIT_S + 0.05)

    def _wal_bytes(self) -> int:
        try:
            return os.path.getsize(self._path + "-wal")
        except OSError:
            return 0

    def _truncate(self, conn: sqlite3.Connection, wait_s: float) -> None:
        """Checkpoint TRUNCATE, waiting at most `wait_s` for readers and writers."""
        conn.execute(f"PRAGMA busy_timeout = {int(wait_s * 1000)}")
        self._writes_may_begin.clear()
        try:
            with suppress(sqlite3.Error):  # busy: tried again after the next write
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        finally:
            self._writes_may_begin.set()
            conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_s * 1000)}")

    def _started(self) -> None:
        self._conn = sqlite3.connect(self._path, timeout=self._busy_timeout_s, isolation_level=None)

    def _work(self) -> None:
        assert self._conn is not None
        with suppress(sqlite3.Error):  # a busy database is checkpointed next time
            self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        if self._wal_bytes() > TRUNCATE_AT_BYTES:
            self._truncate(self._conn, TRUNCATE_WAIT_S)

    def _last(self) -> None:
        """Checkpoint what is left and truncate the log (readers are gone by now)."""
        assert self._conn is not None
        self._truncate(self._conn, self._busy_timeout_s)

    def _ended(self) -> None:
        if self._conn is not None:
            self._conn.close()
