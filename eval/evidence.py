"""Which Memory entries a prepared text carries whole, read from the explain operation's receipt
(exact data, the same for the legacy and the Markdown format): an entry counts when the text
includes it and did not cut its body."""

from __future__ import annotations

from collections.abc import Iterable

from powercontext_api.models import ReceiptItem


def whole_entries(receipt: Iterable[ReceiptItem], scope_id: str) -> set[str]:
    """Entry ids of `scope_id`'s Memory entries included uncut (entry ids are unique per Scope
    only, so an entry read through a Context Reference is not one of them)."""
    return {
        item.entry_id
        for item in receipt
        if item.family == "memory"
        and item.scope_id == scope_id
        and item.included
        and not item.truncated
        and isinstance(item.entry_id, str)
    }
