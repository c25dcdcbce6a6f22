"""PreparedContextBuilder for assembly requests: sections in request order, limits, byte budget.

Each family's pool is cleaned first (blank bodies and repeated identities dropped); recall ranks
count the cleaned pool. Section order is budget priority: each family fits its candidates, in
recall order, into what the earlier families left, until it has included `limit` entries or run
out. Candidates that do not fit are skipped and later, shorter ones still tried. Byte accounting is incremental: every entry's
cost is the size of the exact strings the renderer returns, so the document is their concatenation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..models import PreparedContext
from ..recall.pools import Candidate
from .budget import MIN_TRUNCATED_BODY_BYTES, fit_body
from .markdown import FRAME_BYTES, document, entry_text, metadata_block, quote_body, section_heading
from .receipt import BuiltContext, Considered, clean, left_out, skip_reason


@dataclass(frozen=True, slots=True)
class Section:
    family: str
    limit: int


@dataclass(frozen=True, slots=True)
class AssemblyOptions:
    sections: tuple[Section, ...]
    show_confidence: bool = False
    show_recall_rank: bool = False


def _size(text: str) -> int:
    return len(text.encode("utf-8"))


def build_text_context(
    pools: Mapping[str, Sequence[Candidate]], options: AssemblyOptions, max_bytes: int
) -> BuiltContext:
    """`pools` maps a family to its recalled candidates in recall order, not yet cleaned."""
    used = FRAME_BYTES
    parts: list[str] = []
    receipt: list[Considered] = []
    for section in options.sections:
        heading = section_heading(section.family)
        heading_bytes = _size(heading)
        included = 0
        pool, dropped = clean(pools.get(section.family, ()))
        for rank, candidate in enumerate(pool, start=1):
            if included == section.limit:
                receipt.extend(left_out(pool[rank - 1 :], rank, "limit"))
                break
            lead = heading_bytes if included == 0 else 0
            number = included + 1
            metadata = {
                truncated: metadata_block(
                    candidate.origin,
                    recall_rank=rank,
                    show_confidence=options.show_confidence,
                    show_recall_rank=options.show_recall_rank,
                    truncated=truncated,
                )
                for truncated in (False, True)
            }
            frame = {t: _size(entry_text(section.family, number, m, "")) for t, m in metadata.items()}
            room = max_bytes - used - lead
            room_full, room_truncated = room - frame[False], room - frame[True]
            fitted = None
            # Neither a whole body (≥ 1 byte) nor a cut (≥ the floor) fits: skip the escaping.
            if room_full >= 1 or room_truncated >= MIN_TRUNCATED_BODY_BYTES:
                body = quote_body(candidate.body)
                fitted = fit_body(body.quoted, body.cost, body.pieces, room_full, room_truncated, body.cut)
            if fitted is None:
                receipt.append(Considered(candidate, rank, skip_reason(room_full, room_truncated)))
                continue
            if included == 0:
                parts.append(heading)
            parts.append(entry_text(section.family, number, metadata[fitted.truncated], fitted.text))
            added = lead + frame[fitted.truncated] + fitted.rendered_bytes
            used += added
            included += 1
            receipt.append(Considered(candidate, rank, None, added, fitted.truncated))
        receipt.extend(dropped)
    if not parts:
        return BuiltContext(PreparedContext.empty(), tuple(receipt))
    return BuiltContext(PreparedContext("ready", document(parts)), tuple(receipt))
