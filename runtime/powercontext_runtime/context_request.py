"""A prepare request turned into its built context: the assembly options checked, then every
family recalled from one snapshot, then the legacy envelope or the text assembly built."""

from __future__ import annotations

from pydantic import MISSING

from powercontext_api import models as wire

from .access import Principal
from .errors import ScopeNotFound
from .models import PreparedContext, Scope
from .prepare import BuiltContext, build_legacy_context, build_text_context
from .recall import (
    legacy_topic_body,
    parse_query,
    recall_experience,
    recall_memory,
    recall_text_pools,
    recall_topics,
)
from .request_rules import assembly_options
from .store import Store, scopes

# Families whose recall reads the Context References as well as the current Scope.
REFERENCE_FAMILIES = frozenset({"memory", "experience", "profile"})


def scope_of(store: Store, scope_id: str) -> Scope:
    scope = store.run(scopes.get_scope, scope_id)
    if scope is None:
        raise ScopeNotFound()
    return scope


def build_context(
    store: Store, request: wire.PrepareContextRequest, principal: Principal, max_entries: int
) -> BuiltContext:
    # The total-entries policy is a validation rule: it fails before any lookup or recall.
    options = None if request.assembly is MISSING else assembly_options(request.assembly, max_entries)
    with store.reading():  # every family from one snapshot
        scope = scope_of(store, request.scope_id)
        families = REFERENCE_FAMILIES if options is None else {s.family for s in options.sections}
        if families & REFERENCE_FAMILIES:
            # RFC step 2: every Scope that will be read, before any candidate is read; all or nothing.
            principal.require("scope.read", scope.context_references)
        if options is None:
            query = parse_query(request.query)
            return build_legacy_context(
                recall_memory(store, scope, query),
                request.max_bytes,
                topics=recall_topics(store, scope, query, legacy_topic_body),
                experience=recall_experience(store, scope, query),
            )
        if not options.sections:
            return BuiltContext(PreparedContext.empty())
        pools = recall_text_pools(store, scope, parse_query(request.query), families)
        return build_text_context(pools, options, request.max_bytes)
