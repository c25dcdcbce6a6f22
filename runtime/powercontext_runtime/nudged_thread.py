"""A daemon thread that sleeps until nudged, lets a moment pass so that a burst of nudges is
served once, and does its work; the store's WAL checkpointer and index merger are two."""

from __future__ import annotations

import threading


class NudgedThread:
    """Subclasses do their work in `_work`, and may open and close what it needs in `_started` and
    `_ended` (on the thread) and finish up in `_last` when stopped."""

    def __init__(self, name: str, coalesce_s: float, join_s: float) -> None:
        self._name = name
        self._coalesce_s = coalesce_s
        self._join_s = join_s
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def nudge(self) -> None:
        """Work soon (the thread starts with the first nudge); after `stop`, nothing."""
        with self._lock:
            if self._stopping.is_set():
                return
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
        self._wake.set()

    def stop(self) -> None:
        """End the thread after the work in hand and `_last`; later nudges do nothing."""
        with self._lock:
            self._stopping.set()
            thread = self._thread
        self._wake.set()
        if thread is not None:
            thread.join(timeout=self._join_s)

    def stopping(self) -> bool:
        return self._stopping.is_set()

    def _run(self) -> None:
        self._started()
        try:
            while True:
                self._wake.wait()
                self._stopping.wait(self._coalesce_s)  # returns at once when stopping
                self._wake.clear()
                if self._stopping.is_set():
                    self._last()
                    return
                self._work()
        finally:
            self._ended()

    def _started(self) -> None:
        """On the thread, before any work."""

    def _work(self) -> None:
        raise NotImplementedError

    def _last(self) -> None:
        """On the thread, once stopped."""

    def _ended(self) -> None:
        """On the thread, as it ends."""
