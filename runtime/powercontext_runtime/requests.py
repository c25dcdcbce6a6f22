"""Runtime request models: the semantic rules, enforced for HTTP and direct Runtime calls alike.

The OpenAPI document states the same structure for the wire; these models are what the Runtime
trusts, so a direct call cannot skip a rule the HTTP path enforces.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, Strict, StringConstraints, ValidationError
from pydantic_core import PydanticCustomError

from .errors import ErrorItem, InvalidRequest

# Whitespace as Python, pydantic's Rust regex and ECMA all agree on it; `\S` differs between them.
NON_BLANK_PATTERN = r"[^\t\n\f\r \u000b\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"

MIN_MAX_BYTES = 512
MAX_MAX_BYTES = 32768
DEFAULT_MAX_BYTES = 8000


def _no_lone_surrogates(value: str) -> str:
    # JSON can carry unpaired surrogates; they cannot be stored or encoded as UTF-8.
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise PydanticCustomError("string_unicode", "Input should be a valid Unicode string") from None
    return value


Utf8 = AfterValidator(_no_lone_surrogates)

ScopeIdStr = Annotated[
    str, Strict(), Utf8, StringConstraints(min_length=1, max_length=256, pattern=NON_BLANK_PATTERN)
]
QueryStr = Annotated[
    str, Strict(), Utf8, StringConstraints(min_length=1, max_length=8192, pattern=NON_BLANK_PATTERN)
]
MemoryTextStr = Annotated[
    str, Strict(), Utf8, StringConstraints(min_length=1, max_length=16000, pattern=NON_BLANK_PATTERN)
]
KindStr = Annotated[str, Strict(), Utf8, StringConstraints(pattern=r"^[a-z][a-z0-9_-]{0,63}$")]
TitleStr = Annotated[str, Strict(), Utf8, StringConstraints(max_length=512)]
SummaryStr = Annotated[str, Strict(), Utf8, StringConstraints(max_length=8000)]
CursorStr = Annotated[str, Strict(), Utf8, StringConstraints(min_length=1, max_length=512)]
EntryIdStr = Annotated[str, Strict(), Utf8, StringConstraints(min_length=1, max_length=128)]
EntryVersionIdStr = Annotated[str, Strict(), Utf8, StringConstraints(min_length=1, max_length=160)]


class _Request(BaseModel):
    # Strict scalars (no bool-as-int, no "1"-as-int) while lists and nested objects still parse.
    model_config = ConfigDict(extra="forbid", frozen=True)


class CreateScope(_Request):
    scope_id: ScopeIdStr
    title: TitleStr = ""
    summary: SummaryStr = ""
    context_references: Annotated[tuple[ScopeIdStr, ...], Field(max_length=16)] = ()


class UpdateScope(_Request):
    """`None` means "keep the current value"; the wire omits the field for that."""

    scope_id: ScopeIdStr
    expected_version: Annotated[int, Strict(), Field(ge=1)]
    title: TitleStr | None = None
    summary: SummaryStr | None = None
    context_references: Annotated[tuple[ScopeIdStr, ...], Field(max_length=16)] | None = None


class ListScopes(_Request):
    limit: Annotated[int, Strict(), Field(ge=1, le=200)] = 50
    cursor: CursorStr | None = None


class CitationInput(_Request):
    revision: Annotated[int, Strict(), Field(ge=1)]
    entry_id: EntryIdStr
    entry_version_id: EntryVersionIdStr


class Remember(_Request):
    scope_id: ScopeIdStr
    text: MemoryTextStr
    kind: KindStr = "fact"
    expected_revision: Annotated[int, Strict(), Field(ge=0)] | None = None


class ReviseEntry(_Request):
    scope_id: ScopeIdStr
    citation: CitationInput
    text: MemoryTextStr


class CitedEntry(_Request):
    scope_id: ScopeIdStr
    citation: CitationInput


class ListEntries(_Request):
    scope_id: ScopeIdStr
    limit: Annotated[int, Strict(), Field(ge=1, le=200)] = 50
    cursor: CursorStr | None = None


class SearchMemory(_Request):
    scope_id: ScopeIdStr
    query: QueryStr
    limit: Annotated[int, Strict(), Field(ge=1, le=50)] = 10


class PrepareContext(_Request):
    scope_id: ScopeIdStr
    query: QueryStr
    max_bytes: Annotated[int, Strict(), Field(ge=MIN_MAX_BYTES, le=MAX_MAX_BYTES)] = DEFAULT_MAX_BYTES


RequestT = TypeVar("RequestT", bound=_Request)


def parse_request(model: type[RequestT], data: Mapping[str, Any]) -> RequestT:
    """Build a request model, turning pydantic's report into `InvalidRequest` without input values."""
    try:
        return model.model_validate(dict(data))
    except ValidationError as exc:
        raise InvalidRequest(
            [
                ErrorItem(type=e["type"], loc=tuple(e["loc"]), msg=e["msg"])
                for e in exc.errors(include_url=False, include_context=False, include_input=False)
            ]
        ) from None
