"""The legacy prepare output (assembly omitted): notice, markers and a compact JSON envelope.

Items alternate Memory, Topic Memory, Experience by position, at most eight are included, and each
is fitted under the byte budget with the shared body rules of `budget.py`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from itertools import zip_longest
from typing import Any

from ..models import PreparedContext
from ..recall.pools import Candidate, Origin
from .budget import BodyCost, Cut, fit_body, longest_prefix
from .notice import TRUST_NOTICE
from .receipt import BuiltContext, Considered, clean, skip_reason

BEGIN_MARKER = "BEGIN_POWERCONTEXT_PREPARED_CONTEXT_V1"
END_MARKER = "END_POWERCONTEXT_PREPARED_CONTEXT_V1"
MAX_ITEMS = 8
MAX_EXPERIENCE = 2

_HEAD = f'{TRUST_NOTICE}\n\n{BEGIN_MARKER}\n{{"trust":"untrusted_history","items":['
_TAIL = f"]}}\n{END_MARKER}"
_FRAME_BYTES = len(_HEAD.encode("utf-8")) + len(_TAIL.encode("utf-8"))


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def legacy_citation(origin: Origin, from_current_scope: bool) -> dict[str, Any]:
    ref = {"family": origin.family, "artifact_id": origin.artifact_id, "revision": origin.revision}
    if origin.entry_id is not None:
        memory = (
            {"memory_ref": ref}
            if from_current_scope
            else {"memory": {"scope_id": origin.scope_id, "artifact": ref}}
        )
        return {**memory, "entry_id": origin.entry_id, "entry_version_id": origin.entry_version_id}
    if from_current_scope:
        return {"artifact_ref": ref}
    return {"artifact": {"scope_id": origin.scope_id, "artifact": ref}}


def _json_costs(prefix: str) -> tuple[int, int]:
    return len(prefix.encode("utf-8")), len(_json(prefix).encode("utf-8")) - 2  # 2: the quotes


def _json_cut(body: str, cap_limit: int, room_limit: int) -> Cut:
    """The longest prefix of `body` within both limits, with its costs, by bisection. A body's
    pieces are its code points, each costing its JSON escape (two bytes for a short escape, six for
    another control, its UTF-8 bytes otherwise), so a prefix costs what the prefix as a whole does;
    the tests check this against walking the pieces."""
    length, capped, rendered = longest_prefix(body, _json_costs, cap_limit, room_limit)
    return body[:length], capped, rendered


def legacy_order(
    memory: Sequence[Candidate],
    topics: Sequence[Candidate] = (),
    experience: Sequence[Candidate] = (),
) -> list[tuple[Candidate, str | None, int]]:
    """Memory[0], Topic[0], Experience[0], Memory[1], …, each with its kind (None for Memory) and
    its recall rank in its own pool."""
    ordered: list[tuple[Candidate, str | None, int]] = []
    for rank, (m, t, e) in enumerate(zip_longest(memory, topics, experience[:MAX_EXPERIENCE]), start=1):
        ordered.extend(
            (c, kind, rank) for c, kind in ((m, None), (t, "topic-memory"), (e, "experience")) if c
        )
    return ordered


def prepare_legacy(
    memory: Sequence[Candidate],
    max_bytes: int,
    topics: Sequence[Candidate] = (),
    experience: Sequence[Candidate] = (),
) -> PreparedContext:
    return build_legacy_context(memory, max_bytes, topics, experience).result


def build_legacy_context(
    memory: Sequence[Candidate],
    max_bytes: int,
    topics: Sequence[Candidate] = (),
    experience: Sequence[Candidate] = (),
) -> BuiltContext:
    """The legacy output from recalled pools (not yet cleaned), with its receipt in item order."""
    (memory, dropped_memory), (topics, dropped_topics), (experience, dropped_experience) = (
        clean(memory),
        clean(topics),
        clean(experience),
    )
    remaining = max_bytes - _FRAME_BYTES
    items: list[str] = []
    receipt: list[Considered] = []
    for candidate, kind, rank in legacy_order(memory, topics, experience):
        if len(items) == MAX_ITEMS:
            receipt.append(Considered(candidate, rank, "limit"))
            continue
        head = '{"citation":' + _json(legacy_citation(candidate.origin, candidate.from_current_scope))
        head += ',"content":'
        tail_kind = f',"kind":{_json(kind)}}}' if kind else "}"
        tail_full = ',"truncated":false' + tail_kind
        tail_cut = ',"truncated":true' + tail_kind
        room = remaining - (1 if items else 0) - len(head.encode("utf-8")) - 2  # 2: the body's quotes
        room_full, room_truncated = (
            room - len(tail_full.encode("utf-8")),
            room - len(tail_cut.encode("utf-8")),
        )
        body = candidate.body
        fitted = fit_body(
            body,
            BodyCost(*_json_costs(body)),
            None,  # `_json_cut` always answers
            room_full,
            room_truncated,
            lambda cap, room, body=body: _json_cut(body, cap, room),  # type: ignore[misc]
        )
        if fitted is None:
            receipt.append(Considered(candidate, rank, skip_reason(room_full, room_truncated)))
            continue
        item = head + _json(fitted.text) + (tail_cut if fitted.truncated else tail_full)
        added = (1 if items else 0) + len(item.encode("utf-8"))
        remaining -= added
        items.append(item)
        receipt.append(Considered(candidate, rank, None, added, fitted.truncated))
    receipt.extend(
        Considered(c, rank, "limit") for rank, c in enumerate(experience[MAX_EXPERIENCE:], MAX_EXPERIENCE + 1)
    )
    receipt.extend([*dropped_memory, *dropped_topics, *dropped_experience])
    if not items:
        return BuiltContext(PreparedContext.empty(), tuple(receipt))
    content = _HEAD + ",".join(items) + _TAIL
    return BuiltContext(PreparedContext("ready", content), tuple(receipt))
