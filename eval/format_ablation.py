"""Ablation A: the same selected Memory entries, in the same order, rendered in both formats.

For each question, the Markdown builder picks up to 8 Memory entries under a budget that cuts
none of them (32768 bytes); exactly those candidates are then rendered as the legacy envelope.
Recall is equal by construction, so only size differs: bytes and tokens per document and per item.
Runs in process on the database the evaluation seeded, through the Runtime's public surface.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from typing import Any

from powercontext_runtime import (
    AssemblyOptions,
    Section,
    build_text_context,
    load_scope,
    open_store,
    parse_query,
    prepare_legacy,
    recall_memory,
)

from .locomo import Conversation

BUDGET = 32768
LIMIT = 8


def compare(
    database_url: str, conversations: Sequence[tuple[str, Conversation]], count_tokens: Callable[[str], int]
) -> dict[str, Any]:
    """Per format: mean bytes and tokens of a document and of an item (the frame shared out)."""
    store = open_store(database_url)
    sizes: dict[str, list[tuple[int, int, int]]] = {"markdown": [], "legacy": []}
    options = AssemblyOptions((Section("memory", LIMIT),))
    try:
        for scope_id, conversation in conversations:
            scope = store.run(load_scope, scope_id)
            assert scope is not None
            for question in conversation.questions:
                memory = recall_memory(store, scope, parse_query(question.question))
                built = build_text_context({"memory": memory}, options, BUDGET)
                by_origin = {c.origin: c for c in memory}
                chosen = [by_origin[o] for o in built.origins]
                if not chosen:
                    continue
                for name, content in (
                    ("markdown", built.result.content),
                    ("legacy", prepare_legacy(chosen, BUDGET).content),
                ):
                    assert content is not None
                    sizes[name].append((len(content.encode("utf-8")), count_tokens(content), len(chosen)))
    finally:
        store.close()
    return {
        name: {
            "documents": len(rows),
            "bytes_mean": round(statistics.fmean(b for b, _, _ in rows), 1),
            "tokens_mean": round(statistics.fmean(t for _, t, _ in rows), 1),
            "bytes_per_item": round(sum(b for b, _, _ in rows) / sum(n for _, _, n in rows), 1),
            "tokens_per_item": round(sum(t for _, t, _ in rows) / sum(n for _, _, n in rows), 1),
        }
        for name, rows in sizes.items()
        if rows
    }
