"""Copies SQLite's write-ahead log back into the database on a thread of its own, and keeps the
log's file bounded.

With SQLite's automatic checkpoint the commit that crosses the threshold does the copying, so one
write in every few pays for the pages of many, on the request's thread. Here a write commit only
nudges; a background thread waits a moment so that pages dirtied again and again (the index's
busiest terms) are copied once, then checkpoints PASSIVE, which never blocks readers or writers.
Connections keep a high automatic threshold as a backstop should the thread fall behind.

SQLite starts the log over only when a write begins with every frame copied and no reader on an
older snapshot. Under steady reads (prepares overlap) some reader always holds one, and the file
grew by gigabytes; under steady writes the next commit lands while the PASSIVE checkpoint copies.
So once the log holds RESTART_AT_BYTES (the frames the PASSIVE checkpoint counted, not the file's
size, which a log started over keeps) the thread checkpoints RESTART: this process's writes wait
(`before_write`, at most RESTART_WAIT_S) so that it gets the write lock once the write under way
commits instead of losing every race for it, readers of older snapshots finish meanwhile (new ones
read the database file, every frame being copied), and the next write starts the log over. Should
readers outlast that, it tries again after the next write. RESTART rather than TRUNCATE: emptying
the file held writes back about twice as long, and the writes after it grew the file again. Every
connection sets `journal_size_limit`, so a log that SQLite starts over is cut back to the ceiling,
and stopping truncates the log (closing connections alone leaves it when another process still has
the database open).
"""

from __future__ import annotations

import sqlite3
import threading
from contextlib import suppress

from ..nudged_thread import NudgedThread

AUTOCHECKPOINT_BACKSTOP_PAGES = 16_000  # 64 MiB of 4 KiB pages
COALESCE_SECONDS = 0.2
# The log's file stays under this plus what is written between two checkpoints (COALESCE_SECONDS
# of writes, and the time a restarting checkpoint waits).
WAL_CEILING_BYTES = 64 * 2**20
RESTART_AT_BYTES = 16 * 2**20
RESTART_WAIT_S = 0.25


class WalCheckpointer(NudgedThread):
    def __init__(self, path: str, busy_timeout_s: float) -> None:
        super().__init__("powercontext-wal-checkpoint", COALESCE_SECONDS, join_s=15)
        self._path = path
        self._busy_timeout_s = busy_timeout_s
        self._writes_may_begin = threading.Event()
        self._writes_may_begin.set()
        self._conn: sqlite3.Connection | None = None
        self._page_bytes = 0

    def before_write(self) -> None:
        """A write transaction is about to begin: wait while a restarting checkpoint runs."""
        self._writes_may_begin.wait(RESTART_WAIT_S + 0.05)

    def _checkpoint(self, conn: sqlite3.Connection, mode: str, wait_s: float) -> None:
        """Checkpoint `mode` (RESTART or TRUNCATE) with this process's writes held back, waiting
        at most `wait_s` for readers and writers."""
        conn.execute(f"PRAGMA busy_timeout = {int(wait_s * 1000)}")
        self._writes_may_begin.clear()
        try:
            with suppress(sqlite3.Error):  # tried again after the next write
                conn.execute(f"PRAGMA wal_checkpoint({mode})").fetchone()
        finally:
            self._writes_may_begin.set()
            conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_s * 1000)}")

    def _started(self) -> None:
        self._conn = sqlite3.connect(self._path, timeout=self._busy_timeout_s, isolation_level=None)
        self._page_bytes = self._conn.execute("PRAGMA page_size").fetchone()[0]

    def _work(self) -> None:
        assert self._conn is not None
        try:
            _, log_frames, _ = self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        except sqlite3.Error:  # a busy database is checkpointed next time
            return
        if log_frames * self._page_bytes > RESTART_AT_BYTES:
            self._checkpoint(self._conn, "RESTART", RESTART_WAIT_S)

    def _last(self) -> None:
        """Checkpoint what is left and truncate the log (readers are gone by now)."""
        assert self._conn is not None
        self._checkpoint(self._conn, "TRUNCATE", self._busy_timeout_s)

    def _ended(self) -> None:
        if self._conn is not None:
            self._conn.close()
