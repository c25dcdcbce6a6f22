"""Structural request validation against the OpenAPI document, reported the Runtime's way.

Connexion's own validators answer 400 with jsonschema messages that quote the request. These
replacements raise `InvalidRequest` (a 422 through `errors.py`) whose items are built from the
schema side only: a keyword, where it failed and a fixed message, never the submitted value or key.
Validators are compiled once per schema object and reused across requests.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, Sequence
from typing import Any

from connexion.exceptions import UnsupportedMediaTypeProblem
from connexion.json_schema import Draft4RequestValidator
from starlette.datastructures import Headers, QueryParams
from starlette.types import Message, Receive, Scope

from powercontext_runtime.errors import ErrorItem, InvalidRequest

Loc = tuple[str | int, ...]

# At most this many problems are reported for one request; the first ones are the useful ones.
MAX_REPORTED_ERRORS = 32

_TYPE_ERRORS: dict[str, tuple[str, str]] = {
    "string": ("string_type", "Input should be a valid string"),
    "integer": ("int_type", "Input should be a valid integer"),
    "number": ("float_type", "Input should be a valid number"),
    "boolean": ("bool_type", "Input should be a valid boolean"),
    "object": ("dict_type", "Input should be a valid dictionary"),
    "array": ("list_type", "Input should be a valid list"),
    "null": ("none_required", "Input should be None"),
}
_TYPE_ERROR_NAMES = frozenset(t for t, _ in _TYPE_ERRORS.values())
_INTEGER_TEXT = re.compile(r"-?[0-9]+")
# A JSON escape of a UTF-16 surrogate; only then can a decoded string hold a lone surrogate.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


# Values of a costly property (one with oneOf/anyOf inside) already found valid, per app; a host
# sends the same `assembly` on every turn, and its oneOf over sections is most of the schema's cost.
MAX_REMEMBERED_VALUES = 1024
MAX_REMEMBERED_VALUE_CHARS = 4096


def _has_branches(schema: Any) -> bool:
    if isinstance(schema, Mapping):
        return "oneOf" in schema or "anyOf" in schema or any(_has_branches(v) for v in schema.values())
    if isinstance(schema, list):
        return any(_has_branches(v) for v in schema)
    return False


class ValidatorCache:
    """Compiled jsonschema validators of one app, by schema object.

    Connexion builds a validator object per request; compiling the schema each time was the
    expensive part, so each app keeps its compiled validators here (schemas live as long as it).
    It also answers "certainly valid?" cheaply (`certainly_valid`), so only a body that may be
    invalid pays for the full, itemised report.
    """

    def __init__(self) -> None:
        self._by_id: dict[int, tuple[Mapping[str, Any], Any]] = {}
        self._plans: dict[int, tuple[Mapping[str, Any], Any]] = {}
        self._valid_values: set[tuple[int, str]] = set()

    def compiled(self, schema: Mapping[str, Any]) -> Any:
        hit = self._by_id.get(id(schema))
        if hit is None or hit[0] is not schema:
            hit = (schema, Draft4RequestValidator(schema))
            self._by_id[id(schema)] = hit
        return hit[1]

    def _plan(self, schema: Mapping[str, Any]) -> tuple[Mapping[str, Any], dict[str, Any]] | None:
        """(the schema with its costly properties' schemas emptied, those schemas by name), or None."""
        hit = self._plans.get(id(schema))
        if hit is None or hit[0] is not schema:
            properties = schema.get("properties")
            if not isinstance(properties, Mapping):
                properties = {}
            costly = {k: v for k, v in properties.items() if isinstance(v, Mapping) and _has_branches(v)}
            plan = None
            if costly:
                reduced = {**schema, "properties": {**properties, **{key: {} for key in costly}}}
                plan = (reduced, costly)
            hit = (schema, plan)
            self._plans[id(schema)] = hit
        return hit[1]

    def certainly_valid(self, schema: Mapping[str, Any], instance: Any) -> bool:
        """True only if `instance` satisfies `schema`; False means "run the full report".

        An object is valid iff it satisfies the schema with the costly properties' schemas
        emptied and each costly property's value satisfies its own schema (`properties` checks
        each property on its own). The latter is remembered per distinct value.
        """
        plan = self._plan(schema)
        if plan is None or not isinstance(instance, dict):
            return False
        reduced, costly = plan
        try:
            if not self.compiled(reduced).is_valid(instance):
                return False
            for name, sub in costly.items():
                if name not in instance:
                    continue
                key = json.dumps(instance[name], sort_keys=True, separators=(",", ":"))
                if len(key) > MAX_REMEMBERED_VALUE_CHARS:
                    return False
                if (id(sub), key) in self._valid_values:
                    continue
                if not self.compiled(sub).is_valid(instance[name]):
                    return False
                if len(self._valid_values) >= MAX_REMEMBERED_VALUES:
                    self._valid_values.clear()
                self._valid_values.add((id(sub), key))
        except Exception:  # e.g. a sub-schema that cannot stand alone: let the full report decide
            return False
        return True


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _literal(value: object) -> str:
    return f"'{value}'" if isinstance(value, str) else json.dumps(value)


def _items_for(error: Any, loc: Loc) -> Iterator[ErrorItem]:
    """Translate one jsonschema error into items, reading only the schema and the path."""
    keyword = error.validator
    value = error.validator_value
    if keyword == "type":
        expected = value[0] if isinstance(value, list) and value else value
        type_, msg = _TYPE_ERRORS.get(str(expected), ("value_error", "Input has the wrong type"))
        yield ErrorItem(type_, loc, msg)
    elif keyword == "required":
        present = error.instance if isinstance(error.instance, dict) else {}
        for name in value:
            if name not in present:
                yield ErrorItem("missing", (*loc, name), "Field required")
    elif keyword == "additionalProperties":
        # The unknown key itself is request data, so the location stops at the object.
        yield ErrorItem("extra_forbidden", loc, "Extra inputs are not permitted")
    elif keyword == "minLength":
        yield ErrorItem("string_too_short", loc, f"String should have at least {_plural(value, 'character')}")
    elif keyword == "maxLength":
        yield ErrorItem("string_too_long", loc, f"String should have at most {_plural(value, 'character')}")
    elif keyword == "pattern":
        yield ErrorItem("string_pattern_mismatch", loc, f"String should match pattern '{value}'")
    elif keyword == "minimum":
        if error.schema.get("exclusiveMinimum"):
            yield ErrorItem("greater_than", loc, f"Input should be greater than {value}")
        else:
            yield ErrorItem("greater_than_equal", loc, f"Input should be greater than or equal to {value}")
    elif keyword == "maximum":
        if error.schema.get("exclusiveMaximum"):
            yield ErrorItem("less_than", loc, f"Input should be less than {value}")
        else:
            yield ErrorItem("less_than_equal", loc, f"Input should be less than or equal to {value}")
    elif keyword == "enum":
        yield ErrorItem("literal_error", loc, "Input should be " + " or ".join(_literal(v) for v in value))
    elif keyword == "minItems":
        yield ErrorItem("too_short", loc, f"List should have at least {_plural(value, 'item')}")
    elif keyword == "maxItems":
        yield ErrorItem("too_long", loc, f"List should have at most {_plural(value, 'item')}")
    elif keyword == "uniqueItems":
        yield ErrorItem("unique_items", loc, "List items should be unique")
    elif keyword in ("oneOf", "anyOf") and error.context:
        yield from _branch_items(error.context, loc)
    else:
        yield ErrorItem("value_error", loc, "Input is invalid")


def _branch_items(suberrors: Sequence[Any], loc: Loc) -> Iterator[ErrorItem]:
    """Report a failed oneOf/anyOf by the branch the input meant, not as a bare "invalid".

    When every branch rejects the same value by `enum` (an unknown family), that value gets one
    literal error naming every allowed value. Otherwise the branch with the fewest `enum` misses
    (the one whose discriminating field matched), then the fewest errors, is reported.
    """
    branches: dict[int, list[Any]] = {}
    for sub in suberrors:
        branches.setdefault(sub.schema_path[0], []).append(sub)
    enum_paths = [
        {tuple(e.relative_path) for e in errs if e.validator == "enum"} for errs in branches.values()
    ]
    shared = set.intersection(*enum_paths) if enum_paths else set()
    if shared:
        path = min(shared)
        allowed = [
            v
            for errs in branches.values()
            for e in errs
            if e.validator == "enum" and tuple(e.relative_path) == path
            for v in e.validator_value
        ]
        yield ErrorItem(
            "literal_error", (*loc, *path), "Input should be " + " or ".join(_literal(v) for v in allowed)
        )
        return
    chosen = min(branches.values(), key=lambda errs: (sum(e.validator == "enum" for e in errs), len(errs)))
    for sub in chosen:
        yield from _items_for(sub, (*loc, *sub.relative_path))


def schema_errors(
    cache: ValidatorCache, schema: Mapping[str, Any], instance: Any, root: Loc
) -> list[ErrorItem]:
    """Every violation of `schema` by `instance`, located under `root`, deduplicated and capped."""
    items: list[ErrorItem] = []
    seen: set[tuple[str, Loc]] = set()
    for error in cache.compiled(schema).iter_errors(instance):
        for item in _items_for(error, (*root, *error.absolute_path)):
            if (item.type, item.loc) not in seen:
                seen.add((item.type, item.loc))
                items.append(item)
        if len(items) >= MAX_REPORTED_ERRORS:
            break
    # A value of the wrong type gets only its type error, as pydantic reports it (1.5 for an
    # integer with a minimum is "not an integer", not also "too small").
    mistyped = {item.loc for item in items if item.type in _TYPE_ERROR_NAMES}
    items = [i for i in items if i.loc not in mistyped or i.type in _TYPE_ERROR_NAMES]
    return items[:MAX_REPORTED_ERRORS]


# Bodies -------------------------------------------------------------------------------------------
def _reject_constant(_name: str) -> Any:
    raise ValueError("NaN and Infinity are not JSON")


def _unencodable_strings(value: Any, loc: Loc) -> Iterator[Loc]:
    """Locations of strings (or keys) holding a lone surrogate, which UTF-8 cannot carry."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            yield loc
    elif isinstance(value, dict):
        for key, item in value.items():
            try:
                key.encode("utf-8")
            except UnicodeEncodeError:
                yield loc
                continue
            yield from _unencodable_strings(item, (*loc, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _unencodable_strings(item, (*loc, i))


def parse_json_body(raw: bytes) -> Any:
    """Decode a UTF-8 JSON body strictly, or raise `InvalidRequest` (`json_invalid`/`string_unicode`)."""
    try:
        body = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise InvalidRequest.single("json_invalid", ("body",), "Invalid JSON") from None
    if _SURROGATE_ESCAPE.search(raw):
        bad = list(_unencodable_strings(body, ("body",)))
        if bad:
            raise InvalidRequest(
                [ErrorItem("string_unicode", loc, "Input should be a valid Unicode string") for loc in bad]
            )
    return body


class JsonBodyValidator:
    """Stands in for connexion's JSON body validator (same constructor and `wrap_receive`)."""

    def __init__(
        self,
        *,
        schema: Mapping[str, Any],
        required: bool = False,
        nullable: bool = False,
        encoding: str = "utf-8",
        strict_validation: bool = False,
        cache: ValidatorCache,
        **_: Any,
    ) -> None:
        self._cache = cache
        self._schema = schema
        self._required = required
        self._nullable = nullable

    async def wrap_receive(self, receive: Receive, *, scope: Scope) -> tuple[Receive, Scope]:
        messages: list[Message] = []
        chunks: list[bytes] = []
        async for message in _request_messages(receive):
            messages.append(message)
            chunks.append(message.get("body", b""))
        raw = b"".join(chunks)
        if not raw.strip():
            if self._required:
                raise InvalidRequest.single("missing", ("body",), "Field required")
        elif "content-type" not in Headers(scope=scope):
            # Connexion assumes JSON when the header is absent; a body must say what it is.
            raise UnsupportedMediaTypeProblem(detail="Content-Type is required")
        else:
            body = parse_json_body(raw)
            if not (body is None and self._nullable) and not self._cache.certainly_valid(self._schema, body):
                errors = schema_errors(self._cache, self._schema, body, ("body",))
                if errors:
                    raise InvalidRequest(errors)
        return _replay(messages, receive), scope


async def _request_messages(receive: Receive) -> AsyncIterator[Message]:
    while True:
        message = await receive()
        yield message
        if message["type"] != "http.request" or not message.get("more_body", False):
            return


def _replay(messages: Sequence[Message], receive: Receive) -> Receive:
    pending = list(messages)

    async def replay() -> Message:
        if pending:
            return pending.pop(0)
        return await receive()

    return replay


# Parameters ---------------------------------------------------------------------------------------
def _coerce(raw: str, schema: Mapping[str, Any]) -> Any:
    """Turn query/path text into the schema's scalar type; text that does not parse stays text."""
    if schema.get("type") == "integer" and _INTEGER_TEXT.fullmatch(raw):
        return int(raw)
    return raw


class ParameterValidator:
    """Stands in for connexion's parameter validator: query and path parameters, strict on names."""

    def __init__(
        self,
        parameters: Iterable[Mapping[str, Any]],
        uri_parser: Any = None,
        strict_validation: bool = False,
        security_query_params: Iterable[str] | None = None,
        *,
        cache: ValidatorCache,
    ) -> None:
        self._cache = cache
        self._parameters = list(parameters)
        self._allowed_query = {p["name"] for p in self._parameters if p["in"] == "query"}
        self._allowed_query.update(security_query_params or ())

    def validate(self, scope: Scope) -> None:
        errors = list(self.errors(scope))
        if errors:
            raise InvalidRequest(errors[:MAX_REPORTED_ERRORS])

    def errors(self, scope: Scope) -> Iterator[ErrorItem]:
        query = QueryParams(scope.get("query_string", b""))
        if any(name not in self._allowed_query for name in query):
            yield ErrorItem("extra_forbidden", ("query",), "Extra inputs are not permitted")
        path_params: Mapping[str, Any] = scope.get("path_params", {})
        for param in self._parameters:
            where, name = param["in"], param["name"]
            schema = param.get("schema", {})
            if where == "query":
                raw = query.get(name)
            elif where == "path":
                raw = path_params.get(name)
            else:
                continue
            if raw is None:
                if param.get("required"):
                    yield ErrorItem("missing", (where, name), "Field required")
                continue
            yield from schema_errors(self._cache, schema, _coerce(str(raw), schema), (where, name))
