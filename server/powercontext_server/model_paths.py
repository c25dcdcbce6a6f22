"""Walking a generated model's types along a location, or along the JSON it was given.

pydantic puts the tag of a discriminated union into an error's location (`sections.0.memory.limit`)
where the wire has no such level (`sections.0.limit`): `without_tags` finds and drops it. When a
body holds thousands of unknown keys, pydantic reports one error per key, and turning them into
Python objects costs far more than parsing the body; `objects_with_unknown_keys` finds the objects
that hold them from the parsed JSON instead, in work bounded by the schema, not by the key count.
"""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo

Loc = tuple[str | int, ...]

# More JSON values than any valid body holds (1,000 batch entries and their parts); a walk stops
# there, so its cost never depends on how much a hostile body holds.
WALK_BUDGET = 16_384


def without_tags(model: type[BaseModel], loc: Loc) -> Loc:
    """`loc` of a pydantic error without the union tags pydantic inserts."""
    out: list[str | int] = []
    current: Any = model
    for part in loc:
        current, is_tag = _step(current, part)
        if not is_tag:
            out.append(part)
    return tuple(out)


def objects_with_unknown_keys(model: type[BaseModel], data: Any, limit: int) -> list[Loc]:
    """The wire locations of the first `limit` objects in `data` that hold keys their model does
    not allow, in schema order. Only keys the models know are followed."""
    walk = _Walk(limit)
    walk.visit(model, data, ())
    return walk.found


@dataclass
class _Walk:
    limit: int
    budget: int = WALK_BUDGET
    found: list[Loc] = field(default_factory=list)

    def visit(self, annotation: Any, value: Any, loc: Loc) -> None:
        self.budget -= 1
        if self.budget < 0 or len(self.found) >= self.limit:
            return
        tagged = _tagged_union(annotation)
        if tagged is not None:
            annotation = _member_for(tagged, value)
        current = _plain(annotation)
        if isinstance(value, dict) and isinstance(current, type) and issubclass(current, BaseModel):
            fields = {(info.alias or name): info for name, info in current.model_fields.items()}
            if current.model_config.get("extra") == "forbid" and not value.keys() <= fields.keys():
                self.found.append(loc)
            for key, info in fields.items():  # the known keys only: never one step per unknown key
                if key in value:
                    self.visit(_field_type(info), value[key], (*loc, key))
        elif isinstance(value, list) and typing.get_origin(current) is list:
            (item,) = typing.get_args(current)
            for index, child in enumerate(value):
                if self.budget < 0:
                    return
                self.visit(item, child, (*loc, index))


def _member_for(tagged: tuple[str, list[type[BaseModel]]], value: Any) -> Any:
    discriminator, members = tagged
    tag = value.get(discriminator) if isinstance(value, dict) else None
    for member in members:
        if tag in typing.get_args(member.model_fields[discriminator].annotation):
            return member
    return None


def _field_type(info: FieldInfo) -> Any:
    if info.discriminator is not None:
        return typing.Annotated[info.annotation, FieldInfo(discriminator=info.discriminator)]
    return info.annotation


def _step(current: Any, part: str | int) -> tuple[Any, bool]:
    """(the type at `part` inside `current`, whether `part` was a union tag)."""
    tagged = _tagged_union(current)
    if tagged is not None:
        discriminator, members = tagged
        for member in members:
            if part in typing.get_args(member.model_fields[discriminator].annotation):
                return member, True
        return None, True
    current = _plain(current)
    if isinstance(part, int):
        args = typing.get_args(current)
        return (args[0] if args else None), False
    if isinstance(current, type) and issubclass(current, BaseModel):
        info = current.model_fields.get(part)
        if info is None:
            return None, False
        return _field_type(info), False
    return None, False


def _tagged_union(current: Any) -> tuple[str, list[type[BaseModel]]] | None:
    if typing.get_origin(current) is not typing.Annotated:
        return None
    base, *metadata = typing.get_args(current)
    for meta in metadata:
        if isinstance(meta, FieldInfo) and isinstance(meta.discriminator, str):
            members = [m for m in typing.get_args(base) if isinstance(m, type) and issubclass(m, BaseModel)]
            return meta.discriminator, members
    return None


def _plain(current: Any) -> Any:
    """Strip `Annotated` and pick the model or list out of `X | MISSING` / `X | None`."""
    while typing.get_origin(current) is typing.Annotated:
        current = typing.get_args(current)[0]
    if typing.get_origin(current) in (typing.Union, types.UnionType):
        for member in typing.get_args(current):
            if typing.get_origin(member) is list or (
                isinstance(member, type) and issubclass(member, BaseModel)
            ):
                return member
    return current
