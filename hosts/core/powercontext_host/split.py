"""Cut text into pieces that each fit one Memory entry.

A cut falls at the last paragraph break that fits, else the last line break, else the last space;
only a run of characters without any of them (a long URL, base64) is cut mid-word. Pieces are
stripped, so no piece is blank and the words, in order, are exactly those of the input.
"""

from __future__ import annotations

SEPARATORS = ("\n\n", "\n", " ")
# A break earlier than this fraction of the limit makes pieces needlessly small; try a finer one.
MIN_FILL = 0.5


def split_text(text: str, limit: int) -> list[str]:
    """Non-blank pieces of at most `limit` characters; [] for blank text."""
    if limit < 1:
        raise ValueError("limit must be positive")
    pieces: list[str] = []
    rest = text.strip()
    while len(rest) > limit:
        cut = _cut_at(rest, limit)
        head = rest[:cut].rstrip()
        if head:
            pieces.append(head)
        rest = rest[cut:].lstrip()
    if rest:
        pieces.append(rest)
    return pieces


def _cut_at(text: str, limit: int) -> int:
    """Where to end the next piece: at most `limit` characters in."""
    fallback = 0
    for separator in SEPARATORS:
        index = text.rfind(separator, 1, limit + len(separator))
        if index >= limit * MIN_FILL:
            return index
        fallback = max(fallback, index)
    # No break in the second half of the window: an early one still beats cutting a word.
    return fallback if fallback > 0 else limit
