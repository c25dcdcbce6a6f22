"""The bounded background queue that delivers captured turns, in batches, off the turn's path.

`submit` never blocks and never raises: a full queue drops the turn (counted, logged). One daemon
worker thread drains the queue; turns that queued up for the same destination while a request was
in flight go out together in one `remember/batch` request (bounded by entry count and body size),
so there is no lingering timer and nothing waits at exit. A failed request loses its entries
(counted, logged) and the worker goes on. `flush` waits, bounded, until everything queued is sent;
`close` flushes, then abandons what is left (counted) so shutdown never hangs on a dead server.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ._core.remember import Destination, WriteFailure, Written

MAX_QUEUED_TURNS = 256
MAX_BATCH_ENTRIES = 100  # the server takes up to 1,000; smaller batches keep each request short
MAX_BATCH_BYTES = 256 * 1024  # well under the server's default 1 MiB body cap
ENTRY_OVERHEAD_BYTES = 64  # {"text": ..., "kind": "conversation"} around the encoded text
SESSION_END_FLUSH_TIMEOUT = 3.0
SHUTDOWN_FLUSH_TIMEOUT = 5.0

logger = logging.getLogger(__name__)

# send(destination, texts) stores the texts, all or nothing, and says how many were stored and how
# many the Scope already held.
Sender = Callable[[Destination, Sequence[str]], Written]


@dataclass(frozen=True)
class PendingTurn:
    destination: Destination
    texts: tuple[str, ...]


@dataclass(frozen=True)
class CaptureStats:
    """Counters since the provider started."""

    queued: int = 0  # turns accepted into the queue
    stored: int = 0  # entries the server stored
    duplicates: int = 0  # entries the server already held (the same text, active): nothing stored
    skipped: int = 0  # turns with nothing new to store: empty or repeated
    dropped: int = 0  # turns never sent: queue full, or still queued when shutdown gave up
    failed: int = 0  # entries lost to a failed request
    errors: int = 0  # unexpected errors while capturing (logged, never raised into Hermes)


class CaptureQueue:
    """A bounded FIFO of turns with one lazily started worker thread."""

    def __init__(
        self,
        send: Sender,
        *,
        max_turns: int = MAX_QUEUED_TURNS,
        max_batch_entries: int = MAX_BATCH_ENTRIES,
        max_batch_bytes: int = MAX_BATCH_BYTES,
    ) -> None:
        self._send = send
        self._max_turns = max_turns
        self._max_batch_entries = max_batch_entries
        self._max_batch_bytes = max_batch_bytes
        self._queue: deque[PendingTurn] = deque()
        self._in_flight = 0
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._stats = CaptureStats()
        self._cond = threading.Condition()

    def submit(self, turn: PendingTurn) -> bool:
        """Queue `turn` for delivery; False (counted and logged) when the queue is full."""
        with self._cond:
            if len(self._queue) >= self._max_turns:
                self._count(dropped=1)
                dropped = self._stats.dropped
                full = True
            else:
                self._queue.append(turn)
                self._count(queued=1)
                self._stopping = False
                self._start_worker()
                self._cond.notify_all()
                full = False
        if full:
            logger.warning(
                "PowerContext capture queue is full (%d turns); this turn is not captured (%d dropped)",
                self._max_turns,
                dropped,
            )
        return not full

    def count(self, **deltas: int) -> None:
        """Add to the counters (the provider counts skipped turns and errors here)."""
        with self._cond:
            self._count(**deltas)

    def stats(self) -> CaptureStats:
        with self._cond:
            return self._stats

    def flush(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds until nothing is queued or in flight; True if so."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._queue and self._in_flight == 0, timeout)

    def close(self, timeout: float) -> bool:
        """Flush (bounded), then drop whatever is still queued and let the worker end."""
        flushed = self.flush(timeout)
        with self._cond:
            abandoned = len(self._queue)
            self._queue.clear()
            self._count(dropped=abandoned)
            self._stopping = True
            self._cond.notify_all()
        if abandoned:
            logger.warning("PowerContext capture gave up on %d queued turn(s) at shutdown", abandoned)
        return flushed

    def _count(self, **deltas: int) -> None:
        """Caller holds the condition's lock."""
        current = dataclasses.asdict(self._stats)
        self._stats = CaptureStats(**{k: v + deltas.get(k, 0) for k, v in current.items()})

    def _start_worker(self) -> None:
        """Caller holds the lock. Daemon: a hung request must never keep Hermes from exiting."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="powercontext-capture", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: bool(self._queue) or self._stopping)
                if not self._queue:
                    self._thread = None
                    return
                turns = self._take_batch()
                self._in_flight = len(turns)
            try:
                self._deliver(turns)
            finally:
                with self._cond:
                    self._in_flight = 0
                    self._cond.notify_all()

    def _take_batch(self) -> list[PendingTurn]:
        """Caller holds the lock: the first turn and the following ones for the same destination."""
        turns = [self._queue.popleft()]
        entries = len(turns[0].texts)
        size = sum(_entry_bytes(text) for text in turns[0].texts)
        while self._queue and self._queue[0].destination == turns[0].destination:
            following = self._queue[0]
            more = sum(_entry_bytes(text) for text in following.texts)
            if (
                entries + len(following.texts) > self._max_batch_entries
                or size + more > self._max_batch_bytes
            ):
                break
            turns.append(self._queue.popleft())
            entries += len(following.texts)
            size += more
        return turns

    def _deliver(self, turns: list[PendingTurn]) -> None:
        destination = turns[0].destination
        texts = [text for turn in turns for text in turn.texts]
        for chunk in _chunks(texts, self._max_batch_entries, self._max_batch_bytes):
            try:
                stored = self._send(destination, chunk)
            except WriteFailure as exc:
                self.count(failed=len(chunk))
                logger.warning("PowerContext capture failed, %d entries not stored: %s", len(chunk), exc)
            except Exception as exc:  # a bug must not kill the worker and strand the queue
                self.count(failed=len(chunk), errors=1)
                logger.warning("PowerContext capture failed unexpectedly: %s", type(exc).__name__)
            else:
                self.count(stored=stored.stored, duplicates=stored.duplicates)


def _entry_bytes(text: str) -> int:
    return len(json.dumps(text)) + ENTRY_OVERHEAD_BYTES  # ASCII-escaped, as the request is sent


def _chunks(texts: list[str], max_entries: int, max_bytes: int) -> list[list[str]]:
    """Consecutive groups within both bounds; one entry alone always forms a group."""
    chunks: list[list[str]] = []
    current: list[str] = []
    size = 0
    for text in texts:
        more = _entry_bytes(text)
        if current and (len(current) >= max_entries or size + more > max_bytes):
            chunks.append(current)
            current, size = [], 0
        current.append(text)
        size += more
    if current:
        chunks.append(current)
    return chunks
