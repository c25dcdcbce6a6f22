"""Which turns this provider has already captured, so a repeated turn is not stored twice.

Only fingerprints (hashes) are kept, at most `max_entries`; the oldest are forgotten first, so a
long-running process uses bounded memory and a very old repeat may be stored again.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

MAX_ENTRIES = 4096


class SeenTurns:
    """A thread-safe bounded set of fingerprints."""

    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._max_entries = max_entries
        self._lock = threading.Lock()

    def add(self, fingerprint: str) -> bool:
        """Record `fingerprint`; False when it was already there (a repeat)."""
        with self._lock:
            if fingerprint in self._seen:
                self._seen.move_to_end(fingerprint)
                return False
            self._seen[fingerprint] = None
            while len(self._seen) > self._max_entries:
                self._seen.popitem(last=False)
            return True

    def discard(self, fingerprint: str) -> None:
        """Forget `fingerprint` (its turn was never queued, so a later repeat may be stored)."""
        with self._lock:
            self._seen.pop(fingerprint, None)
