"""What the Runtime checks on top of the contract's schemas, and the bounds it reads from them.

A direct call (no HTTP parsing) meets the contract's bounds here as well, and then the rules a
schema cannot state: each family at most once in an assembly, the configured total-entries
policy, and a Scope never referencing itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import cast, get_args

import annotated_types
from pydantic.fields import FieldInfo

from powercontext_api.models import Assembly, ExperienceSection, FamilySection, PrepareContextRequest
from powercontext_api.models import MemoryCitation as MemoryCitationModel

from .errors import InvalidRequest
from .models import MemoryCitation
from .prepare import AssemblyOptions, Section
from .store.clock import instant


def assembly_options(assembly: Assembly, max_entries: int) -> AssemblyOptions:
    """The builder's options, after each family's limit bounds (again, for requests that were
    never parsed), each family at most once, and at most `max_entries` entries in all."""
    for i, section in enumerate(assembly.sections):
        # The RFC has the Runtime enforce each family's limit itself, not only the HTTP edge's
        # parsing: a request built without validation meets the contract's bounds here.
        low, high = _LIMIT_BOUNDS.get(section.family, (1, 0))
        limit = section.limit
        if type(limit) is not int or not low <= limit <= high:
            raise InvalidRequest.single(
                "family_limit",
                ("assembly", "sections", i, "limit"),
                "The section's limit is outside the bounds of its family",
            )
    families = [section.family for section in assembly.sections]
    if len(set(families)) != len(families):
        raise InvalidRequest.single(
            "duplicate_family", ("assembly", "sections"), "Each family may appear in at most one section"
        )
    if sum(section.limit for section in assembly.sections) > max_entries:
        raise InvalidRequest.single(
            "too_many_entries",
            ("assembly", "sections"),
            f"The section limits add up to more than the configured maximum of {max_entries} entries",
        )
    return AssemblyOptions(
        sections=tuple(Section(s.family, s.limit) for s in assembly.sections),
        show_confidence="confidence" in assembly.show,
        show_recall_rank="recall_rank" in assembly.show,
    )


def check_references(scope_id: str, references: tuple[str, ...]) -> None:
    # Duplicates are the contract's `uniqueItems`; referencing oneself is a rule it cannot state.
    for i, ref in enumerate(references):
        if ref == scope_id:
            raise InvalidRequest.single(
                "reference_self", ("context_references", i), "A Scope cannot reference itself."
            )


def max_bytes_limits() -> tuple[int, int, int]:
    """`max_bytes` bounds and default as the contract states them (read from the generated model)."""
    field = PrepareContextRequest.model_fields["max_bytes"]
    return (*_bounds(field), cast(int, field.default))


def _bounds(field: FieldInfo) -> tuple[int, int]:
    low = next(m.ge for m in field.metadata if isinstance(m, annotated_types.Ge))
    high = next(m.le for m in field.metadata if isinstance(m, annotated_types.Le))
    return cast(int, low), cast(int, high)


# Each family's section limit bounds, as the contract states them: read once, checked per prepare
# (re-validating the sections cost 15 µs a prepare).
_LIMIT_BOUNDS: Mapping[str, tuple[int, int]] = MappingProxyType(
    {
        family: _bounds(section.model_fields["limit"])
        for section in (FamilySection, ExperienceSection)
        for family in get_args(section.model_fields["family"].annotation)
    }
)


def expiry(value: object, loc: tuple[str | int, ...]) -> str | None:
    """An `expires_at` the contract's pattern let through, in the store's time form (None when it
    was left out or null); a date the pattern cannot rule out (30 February) is refused here,
    naming only where it was."""
    if not isinstance(value, str):  # MISSING or None: the model allowed no other value
        return None
    found = instant(value)
    if found is None:
        raise InvalidRequest.single(
            "expires_at", loc, "Not a real instant: expected RFC 3339 in UTC, e.g. 2026-01-31T12:00:00Z"
        )
    return found


def memory_citation(value: MemoryCitationModel) -> MemoryCitation:
    """A request's citation as the store takes it."""
    return MemoryCitation(value.memory_ref.revision, value.entry_id, value.entry_version_id)
