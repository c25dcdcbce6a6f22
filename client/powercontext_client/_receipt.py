"""`powercontext prepare --explain`: a prepare's receipt as a plain-text table."""

from __future__ import annotations

from powercontext_api.models import PreparedContextExplanation, ReceiptItem

_COLUMNS = ("family", "rank", "scope", "artifact", "revision", "entry", "bytes", "body", "result")


def _row(item: ReceiptItem) -> tuple[str, ...]:
    if item.included:
        result = "included, truncated" if item.truncated else "included"
    else:
        result = f"left out: {item.reason}"
    entry = item.entry_version_id if isinstance(item.entry_version_id, str) else "-"
    return (
        item.family,
        "-" if item.recall_rank is None else str(item.recall_rank),
        item.scope_id,
        item.artifact_id,
        str(item.revision),
        entry,
        str(item.bytes),
        str(item.body_bytes),
        result,
    )


def receipt_table(explained: PreparedContextExplanation) -> str:
    """A header line with the status and size, then one aligned row per candidate, in the order
    the budget saw them. `bytes` is what an entry adds to the text, `body` its whole body's size."""
    head = f"status: {explained.status}, content_bytes: {explained.content_bytes}\n"
    if not explained.items:
        return head + "(no candidates)\n"
    rows = [_COLUMNS, *(_row(item) for item in explained.items)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(_COLUMNS))]
    return head + "".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() + "\n"
        for row in rows
    )
