"""Body budgeting shared by every output format: the 2000-byte cap, the `…` cut, the 64-byte floor.

A format describes a body as indivisible pieces (a code point, or a whole escape sequence), each
with two costs: bytes counted against the per-body cap, and bytes it adds to the final text. Cutting
only between pieces can never split a code point or an escape. Fitting scans pieces once, up to the
room that is left, so its cost is linear in the bytes it can place, never a re-render; a format may
also offer `cut`, which finds the same prefix faster (`longest_prefix`: the text format bisects
plain bodies, the legacy JSON format every body).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

ELLIPSIS = "…"
ELLIPSIS_BYTES = len(ELLIPSIS.encode("utf-8"))
MAX_BODY_BYTES = 2000
MIN_TRUNCATED_BODY_BYTES = 64

# (piece text as rendered, bytes against the body cap, bytes added to the final text)
Piece = tuple[str, int, int]
# A whole cut at once: (text as rendered, bytes against the cap, bytes added to the final text).
Cut = tuple[str, int, int]


@dataclass(frozen=True, slots=True)
class BodyCost:
    """Whole-body costs, cheap to compute without walking pieces (the common, fitting case)."""

    capped: int
    rendered: int


@dataclass(frozen=True, slots=True)
class FittedBody:
    text: str  # the body as the format will emit it (already escaped), ellipsis included
    truncated: bool
    rendered_bytes: int


def fit_body(
    full_text: str,
    cost: BodyCost,
    pieces: Callable[[], Iterable[Piece]] | None,
    room_full: int,
    room_truncated: int,
    cut: Callable[[int, int], Cut | None] | None = None,
) -> FittedBody | None:
    """The complete body if it fits, else the longest cut plus `…` that fits, else None.

    `room_full`/`room_truncated` are the bytes left for the body once the entry's fixed parts
    (heading, metadata, citation, truncation flag, separators) are paid for in each case. `cut`,
    when given and it answers, returns the same prefix as walking `pieces` would (a faster way
    to find it for the format); otherwise the pieces are walked. A format whose `cut` always
    answers passes no `pieces`.
    """
    if cost.capped <= MAX_BODY_BYTES and cost.rendered <= room_full:
        return FittedBody(full_text, False, cost.rendered)
    cap_limit = MAX_BODY_BYTES - ELLIPSIS_BYTES
    room_limit = room_truncated - ELLIPSIS_BYTES
    # Rendered bytes are never fewer than capped bytes, so a room under the floor cannot hold a cut.
    if room_truncated < MIN_TRUNCATED_BODY_BYTES:
        return None
    found = None if cut is None else cut(cap_limit, room_limit)
    if found is not None:
        text, capped, rendered = found
    elif pieces is None:
        raise ValueError("fit_body: no pieces to walk, and the cut did not answer")
    else:
        taken: list[str] = []
        capped = rendered = 0
        for piece, piece_capped, piece_rendered in pieces():
            if capped + piece_capped > cap_limit or rendered + piece_rendered > room_limit:
                break
            taken.append(piece)
            capped += piece_capped
            rendered += piece_rendered
        text = "".join(taken)
    if capped + ELLIPSIS_BYTES < MIN_TRUNCATED_BODY_BYTES:
        return None
    return FittedBody(text + ELLIPSIS, True, rendered + ELLIPSIS_BYTES)


def longest_prefix(
    text: str, costs: Callable[[str], tuple[int, int]], cap_limit: int, room_limit: int
) -> tuple[int, int, int]:
    """The length of the longest prefix of `text` within both limits, with its two costs.

    `costs` gives a prefix's bytes against the cap and its rendered bytes; both only grow with
    the prefix, and a code point costs at least a byte of each, so this is exactly the prefix a
    walk of the pieces would take, found in O(log n) C-speed passes instead of one Python step
    per code point.
    """
    low, high = 0, max(0, min(len(text), cap_limit, room_limit))
    while low < high:
        middle = (low + high + 1) // 2
        capped, rendered = costs(text[:middle])
        if capped <= cap_limit and rendered <= room_limit:
            low = middle
        else:
            high = middle - 1
    return (low, *costs(text[:low]))
