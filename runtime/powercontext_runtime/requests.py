"""Runtime request models: the semantic rules, enforced for HTTP and direct Runtime calls alike.

The OpenAPI document states the same structure for the wire; these models are what the Runtime
trusts, so a direct call cannot skip a rule the HTTP path enforces.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    MISSING,
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    Strict,
    StringConstraints,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from .errors import ErrorItem, InvalidRequest

# Whitespace as Python, pydantic's Rust regex and ECMA all agree on it; `\S` differs between them.
NON_BLANK_PATTERN = r"[^\t\n\f\r \u000b\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"

# Revisions and versions stay within what every JSON reader and both databases hold exactly.
MAX_REVISION = 2**53 - 1
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

# Not blank, no control characters, "/" or "%": a Scope id always stands in a URL path and reads
# back exactly (routing refuses a line feed, and a "%" would be decoded twice).
_ID_UNSAFE = r"/%\u0000-\u001f\u007f-\u009f"
SCOPE_ID_PATTERN = rf"^[^{_ID_UNSAFE}]*[^{_ID_UNSAFE}\t\n\f\r \u000b\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000][^{_ID_UNSAFE}]*$"
ScopeIdStr = Annotated[
    str, Strict(), Utf8, StringConstraints(min_length=1, max_length=256, pattern=SCOPE_ID_PATTERN)
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
    expected_version: Annotated[int, Strict(), Field(ge=1, le=MAX_REVISION)]
    title: TitleStr | None = None
    summary: SummaryStr | None = None
    context_references: Annotated[tuple[ScopeIdStr, ...], Field(max_length=16)] | None = None


class ListScopes(_Request):
    limit: Annotated[int, Strict(), Field(ge=1, le=200)] = 50
    cursor: CursorStr | None = None


class CitationInput(_Request):
    revision: Annotated[int, Strict(), Field(ge=1, le=MAX_REVISION)]
    entry_id: EntryIdStr
    entry_version_id: EntryVersionIdStr


class Remember(_Request):
    scope_id: ScopeIdStr
    text: MemoryTextStr
    kind: KindStr = "fact"
    expected_revision: Annotated[int, Strict(), Field(ge=0, le=MAX_REVISION)] | None = None


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


FamilyName = Literal["memory", "experience", "profile", "topic-memory"]
ShowName = Literal["confidence", "recall_rank"]
ArtifactIdStr = Annotated[str, Strict(), Utf8, StringConstraints(pattern=r"^[a-z0-9][a-z0-9._:-]{0,127}$")]
ExperienceTextStr = Annotated[
    str, Strict(), Utf8, StringConstraints(min_length=1, max_length=8000, pattern=NON_BLANK_PATTERN)
]
ProfileTextStr = Annotated[
    str, Strict(), Utf8, StringConstraints(min_length=1, max_length=32000, pattern=NON_BLANK_PATTERN)
]
TopicTitleStr = Annotated[
    str, Strict(), Utf8, StringConstraints(min_length=1, max_length=512, pattern=NON_BLANK_PATTERN)
]
TopicSummaryStr = Annotated[
    str, Strict(), Utf8, StringConstraints(min_length=1, max_length=8000, pattern=NON_BLANK_PATTERN)
]
TopicDetailStr = Annotated[str, Strict(), Utf8, StringConstraints(max_length=64000)]
CandidateIdStr = Annotated[str, Strict(), Utf8, StringConstraints(min_length=1, max_length=128)]
SearchLimit = Annotated[int, Strict(), Field(ge=1, le=50)]
PageLimit = Annotated[int, Strict(), Field(ge=1, le=200)]

MAX_SECTION_LIMIT = 8
MAX_EXPERIENCE_LIMIT = 2
MAX_SECTIONS = 4


class SectionInput(_Request):
    family: FamilyName
    limit: Annotated[int, Strict(), Field(ge=1, le=MAX_SECTION_LIMIT)]

    @model_validator(mode="after")
    def _experience_limit(self) -> SectionInput:
        if self.family == "experience" and self.limit > MAX_EXPERIENCE_LIMIT:
            raise PydanticCustomError("less_than_equal", "Experience allows a limit of at most 2")
        return self


DEFAULT_SECTIONS = (SectionInput(family="memory", limit=6), SectionInput(family="experience", limit=2))


class AssemblyInput(_Request):
    format: Literal["markdown"] = "markdown"
    sections: Annotated[tuple[SectionInput, ...], Field(max_length=MAX_SECTIONS)] = DEFAULT_SECTIONS
    show: Annotated[tuple[ShowName, ...], Field(max_length=2)] = ()

    @field_validator("sections")
    @classmethod
    def _unique_families(cls, sections: tuple[SectionInput, ...]) -> tuple[SectionInput, ...]:
        families = [s.family for s in sections]
        if len(set(families)) != len(families):
            raise PydanticCustomError("duplicate_family", "Each family may appear in at most one section")
        return sections

    @field_validator("show")
    @classmethod
    def _unique_show(cls, show: tuple[str, ...]) -> tuple[str, ...]:
        if len(set(show)) != len(show):
            raise PydanticCustomError("duplicate_show", "Each show value may appear at most once")
        return show


class PrepareContext(_Request):
    scope_id: ScopeIdStr
    query: QueryStr
    max_bytes: Annotated[int, Strict(), Field(ge=MIN_MAX_BYTES, le=MAX_MAX_BYTES)] = DEFAULT_MAX_BYTES
    # Omitted ⇒ legacy output; explicit null is invalid (MISSING rejects None and is never dumped).
    assembly: AssemblyInput | MISSING = MISSING


class ProposeExperience(_Request):
    scope_id: ScopeIdStr
    situation: ExperienceTextStr
    action: ExperienceTextStr
    outcome: ExperienceTextStr
    lesson: ExperienceTextStr
    artifact_id: ArtifactIdStr | None = None


class ProposeProfile(_Request):
    scope_id: ScopeIdStr
    content: ProfileTextStr


class CandidateRef(_Request):
    scope_id: ScopeIdStr
    candidate_id: CandidateIdStr


class DecideCandidate(_Request):
    scope_id: ScopeIdStr
    candidate_id: CandidateIdStr
    expected_version: Annotated[int, Strict(), Field(ge=1, le=MAX_REVISION)]


class ListCandidates(_Request):
    scope_id: ScopeIdStr
    state: Literal["pending", "approved", "rejected"] | None = None
    limit: PageLimit = 50
    cursor: CursorStr | None = None


class ArtifactRefInput(_Request):
    family: FamilyName
    artifact_id: ArtifactIdStr
    revision: Annotated[int, Strict(), Field(ge=1, le=MAX_REVISION)]


class GetArtifact(_Request):
    scope_id: ScopeIdStr
    artifact: ArtifactRefInput


class SearchExperience(_Request):
    scope_id: ScopeIdStr
    query: QueryStr
    limit: SearchLimit = 10


class PutTopic(_Request):
    scope_id: ScopeIdStr
    artifact_id: ArtifactIdStr | None = None
    title: TopicTitleStr
    summary: TopicSummaryStr
    detail: TopicDetailStr = ""
    expected_revision: Annotated[int, Strict(), Field(ge=0, le=MAX_REVISION)] | None = None


class SearchTopics(_Request):
    scope_id: ScopeIdStr
    query: QueryStr
    limit: SearchLimit = 10


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
