"""HTTP request parts -> the operation's generated models, and pydantic's report -> wire errors.

A body is parsed once, by pydantic-core, straight into its generated model (`model_validate_json`:
linear time, strict types, no jsonschema). Path and query text becomes the parameters model.
Every failure is an `InvalidRequest` whose items name a type, a wire location (`body`, `query` or
`path` first) and a message built from the contract's side, never from the submitted values.
"""

from __future__ import annotations

import json
import re
import types
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails, from_json

from powercontext_api.operations import Operation
from powercontext_runtime import ErrorItem, InvalidRequest

Loc = tuple[str | int, ...]
Relocate = Callable[[Loc], Loc]

# At most this many problems are reported for one request; the first ones are the useful ones.
MAX_REPORTED_ERRORS = 32
# Integer text longer than this is left as text (int() of huge digit strings is not linear).
_INTEGER_TEXT = re.compile(r"-?[0-9]{1,30}")
# A JSON escape of a UTF-16 surrogate: only then can a body hold a lone surrogate.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")

# pydantic's words for JSON-mode failures, in the words its Python mode (and so the Runtime) uses.
_RENAMED: dict[str, tuple[str, str]] = {
    "model_type": ("dict_type", "Input should be a valid dictionary"),
    "dict_type": ("dict_type", "Input should be a valid dictionary"),
    "model_attributes_type": ("dict_type", "Input should be a valid dictionary"),
    "json_invalid": ("json_invalid", "Invalid JSON"),
}
# Types whose pydantic message is made from the schema alone (limits, patterns, allowed values).
_SAFE_MESSAGES = frozenset(
    {
        "missing",
        "extra_forbidden",
        "string_type",
        "string_unicode",
        "string_too_short",
        "string_too_long",
        "string_pattern_mismatch",
        "int_type",
        "int_parsing",
        "bool_type",
        "float_type",
        "list_type",
        "literal_error",
        "greater_than",
        "greater_than_equal",
        "less_than",
        "less_than_equal",
        "unique_items",
        "none_required",
    }
)


# Parameters and body ------------------------------------------------------------------------------
def parse_parameters(
    operation: Operation[Any], path: Mapping[str, str], query: Iterable[tuple[str, str]]
) -> BaseModel | None:
    """The operation's parameters model from the path and query text, or `InvalidRequest`."""
    model = operation.parameters_model
    allowed_query = {p.name for p in operation.parameters if p.location == "query"}
    query_values: dict[str, str] = {}
    unknown = False
    for name, value in query:
        if name in allowed_query:
            query_values[name] = value
        else:
            unknown = True
    if unknown:  # the unknown name itself is request data: located at `query` only
        raise InvalidRequest.single("extra_forbidden", ("query",), "Extra inputs are not permitted")
    if model is None:
        return None
    data: dict[str, Any] = {}
    for parameter in operation.parameters:
        raw = path.get(parameter.name) if parameter.location == "path" else query_values.get(parameter.name)
        if raw is not None:
            data[parameter.name] = int(raw) if parameter.integer and _INTEGER_TEXT.fullmatch(raw) else raw
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise InvalidRequest(list(wire_errors(model, exc.errors(), relocate(operation)))) from None


def parse_body(operation: Operation[Any], raw: bytes) -> BaseModel | None:
    """The operation's body model from the raw bytes, or `InvalidRequest`."""
    model = operation.body_model
    if model is None:
        return None
    if not raw.strip():
        if operation.body_required:
            raise InvalidRequest.single("missing", ("body",), "Field required")
        return None
    try:
        return model.model_validate_json(raw)
    except ValidationError as exc:
        errors = exc.errors()
    # Only a failed body pays for these: pydantic's parser accepts NaN and Infinity, and reports a
    # lone surrogate as bad JSON, where the Runtime's rule is "a valid Unicode string" at its place.
    if _SURROGATE_ESCAPE.search(raw):
        errors = _python_mode_errors(model, raw) or errors
    elif not _strict_json(raw):
        raise InvalidRequest.single("json_invalid", ("body",), "Invalid JSON")
    raise InvalidRequest(list(wire_errors(model, errors, lambda loc: ("body", *loc))))


def _strict_json(raw: bytes) -> bool:
    try:
        from_json(raw, allow_inf_nan=False)
    except ValueError:
        return False
    return True


def _reject_constant(_name: str) -> Any:
    raise ValueError("NaN and Infinity are not JSON")


def _python_mode_errors(model: type[BaseModel], raw: bytes) -> list[ErrorDetails] | None:
    """Errors of the body decoded by Python's parser (which keeps lone surrogates), or None when
    that parser refuses it too."""
    try:
        data = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    try:
        model.model_validate(data)
    except ValidationError as exc:
        return exc.errors()
    return None


def relocate(operation: Operation[Any]) -> Relocate:
    """`loc -> wire loc` for an operation: a parameter's name gets its place, anything else is body."""
    places = {p.name: p.location for p in operation.parameters}

    def where(loc: Loc) -> Loc:
        if loc and isinstance(loc[0], str) and loc[0] in places:
            return (places[loc[0]], *loc)
        return ("body", *loc)

    return where


def relocated(operation: Operation[Any], exc: InvalidRequest) -> InvalidRequest:
    """A Runtime rule's error (located in the request models) located on the wire."""
    where = relocate(operation)
    return InvalidRequest([ErrorItem(e.type, where(e.loc), e.msg) for e in exc.errors])


# pydantic errors -> wire items --------------------------------------------------------------------
def wire_errors(
    model: type[BaseModel], errors: Iterable[ErrorDetails], where: Relocate
) -> Iterator[ErrorItem]:
    """pydantic's errors as wire items: deduplicated, capped, located by `where`."""
    seen: set[tuple[str, Loc]] = set()
    for error in errors:
        item = _item(model, error)
        item = ErrorItem(item.type, where(item.loc), item.msg)
        if (item.type, item.loc) in seen:
            continue
        seen.add((item.type, item.loc))
        yield item
        if len(seen) >= MAX_REPORTED_ERRORS:
            return


def _item(model: type[BaseModel], error: ErrorDetails) -> ErrorItem:
    kind = error["type"]
    loc = _without_tags(model, tuple(error["loc"]))
    ctx = error.get("ctx") or {}
    if kind == "extra_forbidden":
        # The unknown key itself is request data, so the location stops at the object.
        return ErrorItem(kind, loc[:-1], error["msg"])
    if kind in ("too_long", "too_short"):
        bound = ctx.get("max_length") if kind == "too_long" else ctx.get("min_length")
        words = "at most" if kind == "too_long" else "at least"
        return ErrorItem(kind, loc, f"List should have {words} {bound} item{'' if bound == 1 else 's'}")
    if kind == "union_tag_invalid":
        tags = str(ctx.get("expected_tags", "")).replace(", ", " or ")
        return ErrorItem("literal_error", (*loc, _discriminator(ctx)), f"Input should be {tags}")
    if kind == "union_tag_not_found":
        return ErrorItem("missing", (*loc, _discriminator(ctx)), "Field required")
    if kind in _RENAMED:
        new_kind, message = _RENAMED[kind]
        return ErrorItem(new_kind, loc, message)
    if kind in _SAFE_MESSAGES:
        return ErrorItem(kind, loc, error["msg"])
    return ErrorItem(kind, loc, "Input is invalid")


def _discriminator(ctx: Mapping[str, Any]) -> str:
    return str(ctx.get("discriminator", "")).strip("'")


def _without_tags(model: type[BaseModel], loc: Loc) -> Loc:
    """pydantic puts the tag of a discriminated union into the location (`sections.0.memory.limit`);
    the wire has no such level (`sections.0.limit`). Walk the model's types to find and drop it."""
    out: list[str | int] = []
    current: Any = model
    for part in loc:
        current, is_tag = _step(current, part)
        if not is_tag:
            out.append(part)
    return tuple(out)


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
        field = current.model_fields.get(part)
        if field is None:
            return None, False
        if field.discriminator is not None:
            return typing.Annotated[field.annotation, FieldInfo(discriminator=field.discriminator)], False
        return field.annotation, False
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
