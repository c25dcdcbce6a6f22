"""The legacy prepare output (assembly omitted): notice, markers and a compact JSON envelope.

Items alternate Memory, Topic Memory, Experience by position, at most eight are included, and each
is fitted under the byte budget with the shared body rules of `budget.py`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from itertools import zip_longest
from typing import Any

from ..models import PreparedContext
from ..recall.pools import Candidate, Origin
from .budget import BodyCost, Piece, fit_body
from .notice import TRUST_NOTICE

BEGIN_MARKER = "BEGIN_POWERCONTEXT_PREPARED_CONTEXT_V1"
END_MARKER = "END_POWERCONTEXT_PREPARED_CONTEXT_V1"
MAX_ITEMS = 8
MAX_EXPERIENCE = 2

_HEAD = f'{TRUST_NOTICE}\n\n{BEGIN_MARKER}\n{{"trust":"untrusted_history","items":['
_TAIL = f"]}}\n{END_MARKER}"
_FRAME_BYTES = len(_HEAD.encode("utf-8")) + len(_TAIL.encode("utf-8"))
_JSON_SHORT_ESCAPES = frozenset('"\\\n\r\t\b\f')


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


def _json_pieces(body: str) -> Iterator[Piece]:
    for ch in body:
        raw = len(ch.encode("utf-8", "surrogatepass"))
        if ch in _JSON_SHORT_ESCAPES:
            yield ch, raw, 2
        elif ch < " ":
            yield ch, raw, 6
        else:
            yield ch, raw, raw


def legacy_order(
    memory: Sequence[Candidate],
    topics: Sequence[Candidate] = (),
    experience: Sequence[Candidate] = (),
) -> list[tuple[Candidate, str | None]]:
    """Memory[0], Topic[0], Experience[0], Memory[1], …; `kind` is None for Memory items."""
    ordered: list[tuple[Candidate, str | None]] = []
    for m, t, e in zip_longest(memory, topics, experience[:MAX_EXPERIENCE]):
        ordered.extend((c, kind) for c, kind in ((m, None), (t, "topic-memory"), (e, "experience")) if c)
    return ordered


def prepare_legacy(
    memory: Sequence[Candidate],
    max_bytes: int,
    topics: Sequence[Candidate] = (),
    experience: Sequence[Candidate] = (),
) -> PreparedContext:
    remaining = max_bytes - _FRAME_BYTES
    items: list[str] = []
    for candidate, kind in legacy_order(memory, topics, experience):
        if len(items) == MAX_ITEMS:
            break
        head = '{"citation":' + _json(legacy_citation(candidate.origin, candidate.from_current_scope))
        head += ',"content":'
        tail_kind = f',"kind":{_json(kind)}}}' if kind else "}"
        tail_full = ',"truncated":false' + tail_kind
        tail_cut = ',"truncated":true' + tail_kind
        room = remaining - (1 if items else 0) - len(head.encode("utf-8")) - 2  # 2: the body's quotes
        body = candidate.body
        cost = BodyCost(len(body.encode("utf-8")), len(_json(body).encode("utf-8")) - 2)
        fitted = fit_body(
            body,
            cost,
            lambda body=body: _json_pieces(body),  # type: ignore[misc]
            room - len(tail_full.encode("utf-8")),
            room - len(tail_cut.encode("utf-8")),
        )
        if fitted is None:
            continue
        item = head + _json(fitted.text) + (tail_cut if fitted.truncated else tail_full)
        remaining -= (1 if items else 0) + len(item.encode("utf-8"))
        items.append(item)
    if not items:
        return PreparedContext.empty()
    content = _HEAD + ",".join(items) + _TAIL
    return PreparedContext("ready", content)
