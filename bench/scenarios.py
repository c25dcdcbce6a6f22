"""The prepare requests under test, and for each the raw Store reads it needs (its floor)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from powercontext_runtime import SearchQuery, Store, load_scope

from .datagen import MAIN_SCOPE, REFERENCE_SCOPES

ALL_SCOPES = [MAIN_SCOPE, *REFERENCE_SCOPES]
# Every family at its largest section limit: 8 + 2 + 8 + 8 = 26 entries (the server runs with
# POWERCONTEXT_SERVER_RUNTIME_CONTEXT_ASSEMBLY_MAX_ENTRIES=26 so the request is allowed).
FOUR_FAMILY_ASSEMBLY = {
    "sections": [
        {"family": "memory", "limit": 8},
        {"family": "experience", "limit": 2},
        {"family": "topic-memory", "limit": 8},
        {"family": "profile", "limit": 8},
    ]
}
ASSEMBLY_MAX_ENTRIES = 26


def _memory(store: Store, query: SearchQuery) -> None:
    store.search_memory(ALL_SCOPES, query, 16, merge_cap=16)


def _experience(store: Store, query: SearchQuery) -> None:
    store.search_experience(ALL_SCOPES, query, 8, merge_cap=8)


def _topics(store: Store, query: SearchQuery) -> None:
    store.search_topics(MAIN_SCOPE, query, 8)


def _profiles(store: Store, query: SearchQuery) -> None:
    store.latest_profiles(ALL_SCOPES)


@dataclass(frozen=True)
class Mode:
    key: str
    label: str
    extra: dict[str, Any]
    reads: tuple[Callable[[Store, SearchQuery], None], ...]

    def body(self, query: str) -> dict[str, Any]:
        return {"scope_id": MAIN_SCOPE, "query": query, **self.extra}

    def wire(self, query: str) -> bytes:
        return json.dumps(self.body(query), ensure_ascii=False).encode("utf-8")

    def raw_reads(self, store: Store, query: SearchQuery) -> None:
        """What prepare cannot avoid: the Scope lookup and the searches of its families."""
        store.run(load_scope, MAIN_SCOPE)
        for read in self.reads:
            read(store, query)


MODES = (
    Mode("legacy", "legacy (no assembly), 8000 B", {}, (_memory, _topics, _experience)),
    Mode("assembly", "`assembly: {}`, 8000 B", {"assembly": {}}, (_memory, _experience)),
    Mode(
        "four",
        "four-family assembly (26 entries), 32768 B",
        {"assembly": FOUR_FAMILY_ASSEMBLY, "max_bytes": 32768},
        (_memory, _experience, _topics, _profiles),
    ),
)
