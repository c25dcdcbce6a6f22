"""Deciding what of a completed turn is stored, then handing it to the background queue.

Per turn: clean it (recalled context removed, secrets redacted), skip it if nothing is left or if
this provider already captured the same content for the same Scope, format it as entries, queue
it. Everything here is quick and local; the network is only touched by the queue's worker.
"""

from __future__ import annotations

from datetime import UTC, datetime

from ._core.entries import KIND, clean, entry_texts, fingerprint, turn_body
from ._core.remember import Destination, MemoryWriter
from ._core.seen import SeenTurns
from .capture import CaptureQueue, CaptureStats, PendingTurn
from .config import Settings

HOST = "Hermes"  # names the host in each captured entry's header


class TurnCapture:
    def __init__(self, queue: CaptureQueue | None = None) -> None:
        self._queue = queue if queue is not None else default_queue()
        self._seen = SeenTurns()

    def capture(
        self, settings: Settings, session_id: str, user: str, assistant: str, when: datetime | None = None
    ) -> bool:
        """Queue the turn's entries; False when nothing was queued (skipped or dropped)."""
        body = turn_body(clean(user), clean(assistant))
        if not body:
            self._queue.count(skipped=1)
            return False
        mark = fingerprint(settings.base_url, settings.scope_id, body)
        if not self._seen.add(mark):
            self._queue.count(skipped=1)
            return False
        texts = entry_texts(body, session_id, when or datetime.now(UTC), HOST)
        destination = Destination(settings.base_url, settings.token, settings.scope_id)
        if not self._queue.submit(PendingTurn(destination, tuple(texts))):
            self._seen.discard(mark)  # never stored, so a later repeat may be
            return False
        return True

    def count_error(self) -> None:
        self._queue.count(errors=1)

    def flush(self, timeout: float) -> bool:
        return self._queue.flush(timeout)

    def close(self, timeout: float) -> bool:
        return self._queue.close(timeout)

    def stats(self) -> CaptureStats:
        return self._queue.stats()


def default_queue() -> CaptureQueue:
    writer = MemoryWriter()
    return CaptureQueue(lambda destination, texts: writer.remember(destination, texts, KIND))
