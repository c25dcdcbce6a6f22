"""ScopedContextApplication: the Runtime's one entry point, used by the HTTP handlers and directly.

Every public method takes a validated request model (see `requests.py`), so a direct call gets the
same semantic checks as an HTTP call, and returns frozen domain values (see `models.py`).
"""

from __future__ import annotations

from .config import Settings
from .cursors import decode_cursor, encode_cursor
from .errors import EntryNotFound, InvalidRequest, ScopeNotFound
from .legacy_prepare import prepare_legacy
from .models import (
    MemoryCitation,
    MemoryEntry,
    MemoryEntryPage,
    MemoryHit,
    PreparedContext,
    Scope,
    ScopePage,
)
from .recall import recall_memory
from .requests import (
    CitationInput,
    CitedEntry,
    CreateScope,
    ListEntries,
    ListScopes,
    PrepareContext,
    Remember,
    ReviseEntry,
    SearchMemory,
    UpdateScope,
)
from .store import Store
from .text_search import parse_query


class ScopedContextApplication:
    def __init__(self, store: Store, settings: Settings) -> None:
        self._store = store
        self.settings = settings

    def close(self) -> None:
        self._store.close()

    def check_ready(self) -> None:
        """Raise `RetrievalUnavailable` when the store does not answer."""
        self._store.ping()

    # Scopes -------------------------------------------------------------------------------------
    def create_scope(self, request: CreateScope) -> Scope:
        _check_references(request.scope_id, request.context_references)
        return self._store.create_scope(
            Scope(
                scope_id=request.scope_id,
                title=request.title,
                summary=request.summary,
                context_references=request.context_references,
                version=1,
            )
        )

    def get_scope(self, scope_id: str) -> Scope:
        scope = self._store.get_scope(scope_id)
        if scope is None:
            raise ScopeNotFound()
        return scope

    def list_scopes(self, request: ListScopes) -> ScopePage:
        after = decode_cursor(request.cursor, "scope") if request.cursor else None
        rows = self._store.list_scopes(after, request.limit + 1)
        page = rows[: request.limit]
        more = len(rows) > request.limit
        return ScopePage(tuple(page), encode_cursor("scope", page[-1].scope_id) if more else None)

    def update_scope(self, request: UpdateScope) -> Scope:
        if request.context_references is not None:
            _check_references(request.scope_id, request.context_references)
        return self._store.update_scope(
            request.scope_id,
            request.expected_version,
            request.title,
            request.summary,
            request.context_references,
        )

    # Memory -------------------------------------------------------------------------------------
    def remember(self, request: Remember) -> MemoryEntry:
        return self._store.remember(request.scope_id, request.text, request.kind, request.expected_revision)

    def revise_memory_entry(self, request: ReviseEntry) -> MemoryEntry:
        return self._store.revise_memory_entry(request.scope_id, _citation(request.citation), request.text)

    def retire_memory_entry(self, request: CitedEntry) -> MemoryEntry:
        return self._store.retire_memory_entry(request.scope_id, _citation(request.citation))

    def get_memory_entry(self, request: CitedEntry) -> MemoryEntry:
        entry = self._store.get_memory_entry(request.scope_id, _citation(request.citation))
        if entry is None:
            raise EntryNotFound()
        return entry

    def list_memory_entries(self, request: ListEntries) -> MemoryEntryPage:
        after = int(decode_cursor(request.cursor, "entry")) if request.cursor else 0
        rows = self._store.list_memory_entries(request.scope_id, after, request.limit + 1)
        page = rows[: request.limit]
        more = len(rows) > request.limit
        return MemoryEntryPage(
            tuple(entry for _, entry in page),
            encode_cursor("entry", str(page[-1][0])) if more else None,
        )

    def search_memory(self, request: SearchMemory) -> list[MemoryHit]:
        self.get_scope(request.scope_id)
        return self._store.search_memory([request.scope_id], parse_query(request.query), request.limit)[0]

    # Prepare ------------------------------------------------------------------------------------
    def prepare_context(self, request: PrepareContext) -> PreparedContext:
        scope = self.get_scope(request.scope_id)
        memory = recall_memory(self._store, scope, parse_query(request.query))
        return prepare_legacy(memory, request.max_bytes)


def _citation(value: CitationInput) -> MemoryCitation:
    return MemoryCitation(value.revision, value.entry_id, value.entry_version_id)


def _check_references(scope_id: str, references: tuple[str, ...]) -> None:
    errors = []
    seen: set[str] = set()
    for i, ref in enumerate(references):
        if ref == scope_id:
            errors.append(("reference_self", "A Scope cannot reference itself."))
        elif ref in seen:
            errors.append(("reference_duplicate", "Context References must be unique."))
        else:
            seen.add(ref)
            continue
        raise InvalidRequest.single(errors[-1][0], ("context_references", i), errors[-1][1])
