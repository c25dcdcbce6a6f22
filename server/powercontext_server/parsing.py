"""HTTP request parts -> the operation's generated models, and pydantic's report -> wire errors.

A body is parsed once, by pydantic-core, straight into its generated model (`model_validate_json`:
linear time, strict types, no jsonschema). Path and query text becomes the parameters model.
Every failure is an `InvalidRequest` whose items name a type, a wire location (`body`, `query` or
`path` first) and a message built from the contract's side, never from the submitted values.
"""

from __future__ import annotations

import functools
import itertools
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails, from_json

from powercontext_api.operations import Operation
from powercontext_runtime import ErrorItem, InvalidRequest

from .model_paths import Loc, objects_with_unknown_keys, without_tags

Relocate = Callable[[Loc], Loc]

# At most this many problems are reported for one request; the first ones are the useful ones.
MAX_REPORTED_ERRORS = 32
# More errors than a body without unknown keys can have (1,000 batch entries, two fields each):
# beyond it they are unknown keys, one error per key, and are found another way (`_body_errors`).
FLOOD_ERRORS = 4_096
EXTRA_MESSAGE = "Extra inputs are not permitted"
# What `_strict_json` and `_python_json` answer for a body their parser refuses.
_NOT_JSON = object()
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
        raise InvalidRequest.single("extra_forbidden", ("query",), EXTRA_MESSAGE)
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
        failure = exc
    # Only a failed body pays for these: pydantic's parser accepts NaN and Infinity, and reports a
    # lone surrogate as bad JSON, where the Runtime's rule is "a valid Unicode string" at its place.
    if _SURROGATE_ESCAPE.search(raw):
        decoded = _python_json(raw)
        if decoded is not _NOT_JSON:
            try:
                model.model_validate(decoded)
            except ValidationError as exc:
                lenient = functools.partial(model.model_validate, decoded, extra="ignore")
                raise InvalidRequest(_body_errors(model, exc, decoded, lenient)) from None
        # Refused by Python's parser too (or valid there): pydantic's own account stands.
    decoded = _strict_json(raw)
    if decoded is _NOT_JSON:
        raise InvalidRequest.single("json_invalid", ("body",), "Invalid JSON")
    lenient = functools.partial(model.model_validate_json, raw, extra="ignore")
    raise InvalidRequest(_body_errors(model, failure, decoded, lenient))


def _body_errors(
    model: type[BaseModel], failure: ValidationError, decoded: Any, lenient: Callable[[], Any]
) -> list[ErrorItem]:
    """The wire items of a refused body, `decoded` being its JSON."""
    if failure.error_count() <= FLOOD_ERRORS:
        return list(wire_errors(model, failure.errors(), _in_body))
    # Thousands of unknown keys: the other errors are those pydantic finds when it ignores unknown
    # keys, and the objects holding them are found in the decoded JSON, each at a cost bounded by
    # the schema rather than by the number of keys.
    try:
        lenient()
        others: list[ErrorDetails] = []
    except ValidationError as exc:
        others = exc.errors()
    holders = objects_with_unknown_keys(model, decoded, MAX_REPORTED_ERRORS) or [()]
    extras = (ErrorItem("extra_forbidden", _in_body(loc), EXTRA_MESSAGE) for loc in holders)
    return list(_distinct(itertools.chain(wire_errors(model, others, _in_body), extras)))


def _in_body(loc: Loc) -> Loc:
    return ("body", *loc)


def _strict_json(raw: bytes) -> Any:
    """The body decoded by the strict JSON parser (no NaN or Infinity), or `_NOT_JSON`."""
    try:
        return from_json(raw, allow_inf_nan=False)
    except ValueError:
        return _NOT_JSON


def _reject_constant(_name: str) -> Any:
    raise ValueError("NaN and Infinity are not JSON")


def _python_json(raw: bytes) -> Any:
    """The body decoded by Python's parser (which keeps lone surrogates), or `_NOT_JSON`."""
    try:
        return json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return _NOT_JSON


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
    located = (_item(model, error) for error in errors)
    return _distinct(ErrorItem(item.type, where(item.loc), item.msg) for item in located)


def _distinct(items: Iterable[ErrorItem]) -> Iterator[ErrorItem]:
    seen: set[tuple[str, Loc]] = set()
    for item in items:
        if (item.type, item.loc) in seen:
            continue
        seen.add((item.type, item.loc))
        yield item
        if len(seen) >= MAX_REPORTED_ERRORS:
            return


def _item(model: type[BaseModel], error: ErrorDetails) -> ErrorItem:
    kind = error["type"]
    loc = without_tags(model, tuple(error["loc"]))
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
