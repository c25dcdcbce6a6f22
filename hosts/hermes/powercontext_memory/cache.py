"""The prefetch cache: text is reused only under an identical request identity.

The key holds everything that can change the prepared text: mode, Scope, session, turn, query, the
effective assembly (see `effective_assembly`) and max_bytes (plus the server URL). A changed budget
or assembly is a new key, so text prepared under old settings is never served; the mode and
assembly are those actually sent (legacy after a capabilities fallback). A failed request is
stored as "" for its key, so a repeated `prefetch` of the same turn does not wait on the same
outage again.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from .config import Mode, Settings

MAX_ENTRIES = 64

# What the server assumes for a key the `assembly` object leaves out. The RFC
# (rfc-prepared-context-text-assembly.md): "assembly: {} uses the text defaults: up to six Memory
# entries followed by up to two Experience entries, without optional metadata"; `format` defaults
# to "markdown" (openapi/powercontext.yaml, `Assembly`). Used for the cache key only: the request
# body is sent exactly as configured.
ASSEMBLY_DEFAULTS: Mapping[str, object] = MappingProxyType(
    {
        "format": "markdown",
        "sections": [{"family": "memory", "limit": 6}, {"family": "experience", "limit": 2}],
        "show": [],
    }
)


def effective_assembly(assembly_json: str) -> str:
    """The configuration the server applies, as canonical JSON: defaults filled in, object keys
    sorted at every level, list order kept (section order is output and budget order)."""
    effective = {**ASSEMBLY_DEFAULTS, **json.loads(assembly_json)}
    return json.dumps(effective, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class CacheKey:
    mode: Mode
    scope_id: str
    session_id: str
    turn: int
    query: str
    assembly: str | None  # effective_assembly(...) of what is sent; None in legacy mode
    max_bytes: int
    base_url: str


def cache_key(settings: Settings, session_id: str, turn: int, query: str) -> CacheKey:
    """The one key derivation; `settings` are those the request is sent with."""
    return CacheKey(
        mode=settings.mode,
        scope_id=settings.scope_id,
        session_id=session_id,
        turn=turn,
        query=query,
        assembly=None if settings.assembly_json is None else effective_assembly(settings.assembly_json),
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
