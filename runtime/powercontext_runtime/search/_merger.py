"""Runs the index's merges (`_merge.py`) on a thread of the store's own.

A write commit only nudges it; the thread waits a moment so that a stream of writes is checked
once, asks which families have a merge due or under way, and carries each on a chunk (one short
write transaction) at a time until none is left or the store closes. The request whose write made
a merge due has its answer by then, and the event loop never runs a merge. A merge cut short (the
store closed, the process was killed) is carried on from its last committed chunk by the next
merger of the database: every store nudges its merger once when it opens.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from ..nudged_thread import NudgedThread

COALESCE_SECONDS = 0.2
# How long a merge step waits at most for the writes that are queueing for the database to begin.
YIELD_SECONDS = 2.0

logger = logging.getLogger("powercontext.store")


class IndexMerger(NudgedThread):
    def __init__(self, work: Callable[[Callable[[], bool]], object]) -> None:
        """`work(stopping)` merges what is due, and returns early once `stopping()` is true."""
        super().__init__("powercontext-index-merge", COALESCE_SECONDS, join_s=60)
        self._merge = work

    def _work(self) -> None:
        try:
            self._merge(self.stopping)
        except Exception:  # the database was busy or away: the next nudge tries again
            logger.warning("an index merge step failed; it is retried at the next write", exc_info=True)


class WriterGate:
    """Lets a merge step wait while requests' write transactions are queueing to begin. SQLite
    gives its write lock to whoever asks first after it is released, and a waiting writer only asks
    again after a sleep of up to 100 ms: a merger that begins its next step at once would take the
    lock every time, and the request would fail after the busy timeout."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._waiting = 0

    @contextmanager
    def waiting(self) -> Iterator[None]:
        """Around beginning a write transaction: counts it while it waits."""
        with self._changed:
            self._waiting += 1
        try:
            yield
        finally:
            with self._changed:
                self._waiting -= 1
                self._changed.notify_all()

    def wait_clear(self) -> None:
        """Until no write waits to begin (YIELD_SECONDS at most)."""
        with self._changed:
            self._changed.wait_for(lambda: self._waiting == 0, YIELD_SECONDS)
