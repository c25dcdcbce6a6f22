"""Each line of a Scope export held to the contract: the header to `ScopeExportHeader`, every other
line to its `ScopeExport*` schema (ids, lengths, numbers ≥ 1, families, states, timestamps), and the
stored JSON inside artifact and Candidate lines to the bounds of the request that would have
written it. pydantic-core parses and validates a line in one pass, so a file costs time linear in
its size, and a line longer than any the contract allows is refused before it is parsed.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, get_args

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from powercontext_api.models import (
    ProposeExperienceRequest,
    ProposeProfileRequest,
    PutTopicRequest,
    ScopeExportHeader,
    ScopeExportLine,
    ScopeExportScope,
)

from ..errors import InvalidExport
from ..models import EXPERIENCE_FAMILY, PROFILE_FAMILY


class TransferRefused(InvalidExport):
    """The export or import cannot be done as asked (unknown Scope, not an export, unknown format
    version, a line outside the contract, Scope id taken, referenced Scopes missing, inconsistent
    file); nothing was written."""


# The longest line the contract allows is a topic revision (64,000 + 8,000 + 512 characters, each
# escaped twice at worst, about 0.5 MB): 1 MiB bounds every line with room to spare.
MAX_LINE_BYTES = 1 << 20

# Every line after the header, told apart by its "type" in the same pass that validates it.
_LINE_UNION = get_args(ScopeExportLine.__value__)[0]  # the contract's oneOf, without its description
_ROW_MODELS: dict[str, type[BaseModel]] = {
    get_args(model.model_fields["type"].annotation)[0]: model for model in get_args(_LINE_UNION)
}
# Without pydantic's cache of parsed strings, which would keep up to 16,384 of a file's texts.
_ROWS: TypeAdapter[Any] = TypeAdapter(
    Annotated[_LINE_UNION, Field(discriminator="type")],  # type: ignore[arg-type]
    config=ConfigDict(cache_strings=False),
)
# A stored payload is what the request that wrote it held: a placeholder Scope id stands in.
_PLACEHOLDER_SCOPE = "export:check"


def header(number: int, raw: bytes) -> ScopeExportHeader:
    """The header line as its model, or `TransferRefused` naming the first field out of bounds."""
    _check_length(number, raw)
    try:
        return ScopeExportHeader.model_validate_json(raw)
    except ValidationError as exc:
        raise _refused(number, "header", ScopeExportHeader, exc.errors(include_input=False)) from None


def row(number: int, raw: bytes) -> Any:
    """A line after the header as its `ScopeExport*` model, or `TransferRefused`."""
    _check_length(number, raw)
    try:
        return _ROWS.validate_json(raw)
    except ValidationError as exc:
        errors = exc.errors(include_input=False)
    kind = _line_type(raw)
    model = _ROW_MODELS.get(kind or "")
    if model is not None:  # pydantic puts the union's tag first in each location: not a field
        errors = [{**e, "loc": e["loc"][1:]} for e in errors if e["loc"][:1] == (kind,)] or errors
    raise _refused(number, kind if model is not None else "unknown type", model, errors)


def check_payload(number: int, family: str, payload: str, proposal: bool) -> None:
    """The stored JSON of an artifact revision (or a Candidate's proposal, `proposal`) must be what
    a request of its family could have written."""
    try:
        data = json.loads(payload)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise TransferRefused(f"Line {number}: the payload is not a JSON object.", number)
    model: type[BaseModel]
    if family == EXPERIENCE_FAMILY:
        model, fields = ProposeExperienceRequest, data
    elif family == PROFILE_FAMILY:
        # Stored with exactly one line feed added at the end.
        content = data.get("content")
        fields = {**data, "content": content[:-1] if isinstance(content, str) else content}
        if not (isinstance(content, str) and content.endswith("\n")):
            raise TransferRefused(
                f"Line {number}: the Profile payload does not end with a line feed.", number
            )
        model = ProposeProfileRequest
    elif not proposal:
        model, fields = PutTopicRequest, data
        if set(data) != {"title", "summary", "detail"}:
            raise TransferRefused(f"Line {number}: the topic payload lacks or adds fields.", number)
    else:
        raise TransferRefused(f"Line {number}: a Candidate of family {family} cannot be.", number)
    try:
        model.model_validate({**fields, "scope_id": _PLACEHOLDER_SCOPE}, strict=True)
    except ValidationError as exc:
        errors = [{**e, "loc": ("payload", *e["loc"])} for e in exc.errors(include_input=False)]
        raise _refused(number, "payload", model, errors) from None


def _check_length(number: int, raw: bytes) -> None:
    if len(raw) > MAX_LINE_BYTES:
        raise TransferRefused(
            f"Line {number} is longer than {MAX_LINE_BYTES} bytes, more than any export line can be.", number
        )


def _line_type(raw: bytes) -> str | None:
    """The line's "type" when it is a JSON object with a string one (for the message only)."""
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    kind = data.get("type") if isinstance(data, dict) else None
    return kind if isinstance(kind, str) and kind in _ROW_MODELS else None


def _refused(number: int, what: str | None, model: Any, errors: list[Any]) -> TransferRefused:
    first: dict[str, Any] = errors[0] if errors else {"loc": (), "msg": "Input is invalid", "type": "invalid"}
    if first["type"] in ("json_invalid", "dict_type", "model_type"):
        return TransferRefused(f"Line {number} is not a JSON object; the file is damaged.", number)
    if first["type"] in ("union_tag_invalid", "union_tag_not_found"):
        tag = json.dumps((first.get("ctx") or {}).get("tag"))
        return TransferRefused(f"Line {number} has an unknown type {tag}.", number, model, errors)
    where = ".".join(str(part) for part in first["loc"]) or "the line"
    # A pattern's text is long and says little to a reader: name the field instead.
    problem = (
        "does not have the form the contract gives it"
        if first["type"] == "string_pattern_mismatch"
        else first["msg"]
    )
    more = f" (and {len(errors) - 1} more problems)" if len(errors) > 1 else ""
    return TransferRefused(
        f"Line {number} ({what}) is outside the contract: {where}: {problem}{more}.", number, model, errors
    )


class RowLimits:
    """What the contract's schemas cannot say about a row: its ids spell its numbers, and its
    numbers stay within the Scope's counters, so the next remember, revision or Candidate the
    store hands out can never collide with an imported one."""

    def __init__(self) -> None:
        self.scope: ScopeExportScope | None = None
        self.counters: dict[str, int] = {}

    def check(self, number: int, record: Any) -> None:
        assert self.scope is not None  # rows come after the Scope's line
        entries, revisions = self.scope.entry_counter, self.scope.memory_revision
        kind = record.type
        if kind == "counter":
            self.counters[record.name] = record.value
        elif kind == "memory_revision":
            self._within(number, "revision", record.revision, revisions)
            self._within(number, "entry_id", _number(record.entry_id), entries)
        elif kind == "memory_entry":
            self._spelled(number, "entry_id", record.entry_id, f"entry-{record.entry_number}")
            self._within(number, "entry_number", record.entry_number, entries)
            self._within(number, "retired_revision", record.retired_revision or 0, revisions)
        elif kind == "memory_entry_version":
            expected = f"{record.entry_id}-v{record.version_number}"
            self._spelled(number, "entry_version_id", record.entry_version_id, expected)
            self._within(number, "entry_id", _number(record.entry_id), entries)
            self._within(number, "added_revision", record.added_revision, revisions)
            self._within(number, "removed_revision", record.removed_revision or 0, revisions)
        elif kind == "memory_erasure":
            self._within(number, "erased_revision", record.erased_revision, revisions)
        elif kind == "candidate":
            self._spelled(number, "candidate_id", record.candidate_id, f"candidate-{record.candidate_number}")
            # An approved Candidate names the revision it committed; no other one names any.
            committed = (record.committed_artifact_id is not None, record.committed_revision is not None)
            if committed != ((record.state == "approved"),) * 2:
                raise TransferRefused(
                    f"Line {number}: a Candidate names a committed revision exactly when it is approved.",
                    number,
                )
            self._within(
                number, "candidate_number", record.candidate_number, self.counters.get("candidate", 0)
            )

    @staticmethod
    def _spelled(number: int, field: str, value: str, expected: str) -> None:
        if value != expected:
            raise TransferRefused(f"Line {number}: {field} does not match the numbers on its line.", number)

    @staticmethod
    def _within(number: int, field: str, value: int, counter: int) -> None:
        if value > counter:
            raise TransferRefused(
                f"Line {number}: {field} is beyond the Scope's counter ({counter}); the file is inconsistent.",
                number,
            )


def _number(entry_id: str) -> int:
    return int(entry_id.removeprefix("entry-"))
