"""The prefetch cache: text is reused only under an identical request identity.

The key holds everything that can change the prepared text: mode, Scope, session, turn, query, the
normalised assembly JSON and max_bytes (plus the server URL). A changed budget or assembly is a new
key, so text prepared under old settings is never served. A failed request is stored as "" for
its key, so the background `queue_prefetch` of the same turn does not wait on the same outage again.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

from .config import Mode, Settings

MAX_ENTRIES = 64


@dataclass(frozen=True)
class CacheKey:
    mode: Mode
    scope_id: str
    session_id: str
    turn: int
    query: str
    assembly_json: str | None
    max_bytes: int
    base_url: str


def cache_key(settings: Settings, session_id: str, turn: int, query: str) -> CacheKey:
    """The one key derivation that `prefetch` and `queue_prefetch` both use."""
    return CacheKey(
        mode=settings.mode,
        scope_id=settings.scope_id,
        session_id=session_id,
        turn=turn,
        query=query,
        assembly_json=settings.assembly_json,
        max_bytes=settings.max_bytes,
        base_url=settings.base_url,
    )


class PreparedCache:
    """A small thread-safe LRU of validated texts ("" stands for a valid empty result)."""

    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self._entries: OrderedDict[CacheKey, str] = OrderedDict()
        self._max_entries = max_entries
        self._lock = threading.Lock()

    def get(self, key: CacheKey) -> str | None:
        with self._lock:
            text = self._entries.get(key)
            if text is not None:
                self._entries.move_to_end(key)
            return text

    def put(self, key: CacheKey, text: str) -> None:
        with self._lock:
            self._entries[key] = text
            self._entries.move_to_end(key)
            while len(self._entries) > self._max_entries:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
