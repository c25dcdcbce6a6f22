"""The receipt of a prepare: every recalled candidate, and what cleaning and the budget did with it.

Built by the same pass that renders the text (`builder.py`, `legacy.py`), so the included items
are exactly the entries in the text, in their order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from ..models import PreparedContext
from ..recall.pools import Candidate, Origin

Reason = Literal["limit", "budget", "below_minimum_body", "blank", "duplicate"]


@dataclass(frozen=True, slots=True)
class Considered:
    candidate: Candidate
    recall_rank: int | None  # position in the family's cleaned pool; None: cleaning dropped it
    reason: Reason | None = None  # None: included
    rendered_bytes: int = 0  # what the entry adds to the text
    truncated: bool = False

    @property
    def included(self) -> bool:
        return self.reason is None


def clean(pool: Sequence[Candidate]) -> tuple[list[Candidate], list[Considered]]:
    """The RFC's pool cleaning: drop candidates without a body and repeats of an exact identity,
    keeping first occurrences. Returns the kept candidates and the dropped ones with why."""
    seen: set[object] = set()
    kept: list[Candidate] = []
    dropped: list[Considered] = []
    for candidate in pool:
        if not candidate.body.strip():
            dropped.append(Considered(candidate, None, "blank"))
        elif candidate.origin in seen:
            dropped.append(Considered(candidate, None, "duplicate"))
        else:
            seen.add(candidate.origin)
            kept.append(candidate)
    return kept, dropped


def skip_reason(room_full: int, room_truncated: int) -> Reason:
    """Why a candidate that fits neither whole nor cut is left out, from the bytes its body had."""
    return "below_minimum_body" if max(room_full, room_truncated) >= 1 else "budget"


def left_out(candidates: Sequence[Candidate], first_rank: int, reason: Reason) -> list[Considered]:
    return [Considered(c, rank, reason) for rank, c in enumerate(candidates, start=first_rank)]


@dataclass(frozen=True, slots=True)
class BuiltContext:
    """The response and its receipt: every candidate of the families asked for, section by
    section, the included ones in output order."""

    result: PreparedContext
    receipt: tuple[Considered, ...] = ()

    @property
    def origins(self) -> tuple[Origin, ...]:
        """The exact origins of the entries the text includes, in output order."""
        return tuple(c.candidate.origin for c in self.receipt if c.included)
