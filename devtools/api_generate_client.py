"""`generated/powercontext_api/client.py`: the Python client's methods, one per operation, sync and async.

Each method's arguments are the operation's path and query parameters, then its body's fields,
typed from the contract; `client/powercontext_client/_conveniences.py` says which are positional
and where the client is wider than the wire. A method hands its arguments to `_call`, which the
clients implement once (`powercontext_client._operations.request` builds the request).
"""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CONVENIENCES = ROOT / "client" / "powercontext_client" / "_conveniences.py"
SCALARS = {"string": "str", "integer": "int", "boolean": "bool", "number": "float"}

PREAMBLE = [
    '"""The client\'s methods: one per operation of the contract, in `SyncMethods` and `AsyncMethods`.',
    "",
    "`PowerContextClient` and `AsyncPowerContextClient` subclass them and send what `_call` is given.",
    '"""',
    "",
    "from __future__ import annotations",
    "",
    "import enum",
    "from collections.abc import Mapping, Sequence",
    "from typing import Any, Final, Literal, TypeAlias, TypeVar",
    "",
    "from pydantic import BaseModel",
    "",
    "from . import models, operations",
    "from .operations import Operation",
    "",
    'ResponseT = TypeVar("ResponseT", bound=BaseModel)',
    "",
    "",
    "class Unset(enum.Enum):",
    '    """Type of `UNSET`: "the caller did not pass this argument", distinct from `None`."""',
    "",
    '    UNSET = "UNSET"',
    "",
    "    def __repr__(self) -> str:",
    '        return "UNSET"',
    "",
    "",
    "UNSET: Final = Unset.UNSET",
    "",
]

CALL_DOC = (
    "Any operation of the contract by its entry in `powercontext_api.operations`, e.g.\n"
    '`pc.call(operations.GET_PROFILE, {"scope_id": "project:demo"})`: the body (a generated model\n'
    "or a mapping) and the path and query parameters are validated by the operation's generated\n"
    "models, and the answer is its generated response model. The named methods are shortcuts."
)


def load_conveniences() -> ModuleType:
    """The conveniences table, from its file: the client package imports this generated code."""
    spec = importlib.util.spec_from_file_location("_powercontext_conveniences", CONVENIENCES)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while they are created
    spec.loader.exec_module(module)
    return module


def client_module(
    spec: Mapping[str, Any],
    operations: Iterator[tuple[str, str, dict[str, Any], list[dict[str, Any]]]],
    resolve: Callable[[Mapping[str, Any]], Mapping[str, Any]],
    response_of: Callable[[dict[str, Any]], str],
) -> str:
    table = load_conveniences()
    lines = list(PREAMBLE)
    for name, (source, doc) in table.ALIASES.items():
        lines += ["", f"{name}: TypeAlias = {_alias(spec, source)}", f'"""{doc}"""']
    methods = [
        _method(spec, path, verb, op, params, table.method(op["operationId"]), resolve, response_of(op))
        for path, verb, op, params in operations
        if table.method(op["operationId"]).generated
    ]
    for kind in ("Sync", "Async"):
        lines += _class(kind, methods)
    return "\n".join(lines) + "\n"


def _alias(spec: Mapping[str, Any], source: str) -> str:
    if not source.startswith("enum:"):
        return source
    schema_name, _, prop = source[len("enum:") :].partition(".")
    schema = spec["components"]["schemas"][schema_name]
    values = (schema["properties"][prop] if prop else schema)["enum"]
    return f"Literal[{', '.join(repr(v) for v in values)}]"


def _class(kind: str, methods: list[tuple[str, list[str], str, str, str, str]]) -> list[str]:
    is_async = kind == "Async"
    define, wait = ("async def", "await ") if is_async else ("def", "")
    lines = [
        "",
        "",
        f"class {kind}Methods:",
        f'    """The named methods of the {kind.lower()} client, from the operation table."""',
        "",
        f"    {define} _call(self, operation: Operation[ResponseT], arguments: Mapping[str, Any]) -> ResponseT:",
        '        """Send `operation` with the arguments a method was given (`None`: not sent)."""',
        "        raise NotImplementedError",
        "",
        f"    {define} _call_exact(self, operation: Operation[ResponseT], given: Mapping[str, Any]) -> ResponseT:",
        '        """Send `operation` with the `body`, `path` and `query` that `call` was given."""',
        "        raise NotImplementedError",
        "",
        f"    {define} call(",
        "        self,",
        "        operation: Operation[ResponseT],",
        "        body: BaseModel | Mapping[str, Any] | None = None,",
        "        *,",
        "        path: Mapping[str, str | int] | None = None,",
        "        query: Mapping[str, str | int] | None = None,",
        "    ) -> ResponseT:",
        *_docstring(CALL_DOC),
        f'        return {wait}self._call_exact(operation, {{"body": body, "path": path, "query": query}})',
    ]
    for name, params, returns, doc, constant, arguments in methods:
        lines += ["", f"    {define} {name}(", "        self,", *(f"        {p}," for p in params)]
        lines += [f"    ) -> {returns}:", *_docstring(doc)]
        lines.append(f"        return {wait}self._call(operations.{constant}, {{{arguments}}})")
    return lines


def _docstring(text: str) -> list[str]:
    body = textwrap.indent(text, "        ").splitlines()
    body[0] = '        """' + body[0].lstrip()
    body[-1] += '"""'
    return body


def _method(
    spec: Mapping[str, Any],
    path: str,
    verb: str,
    op: Mapping[str, Any],
    parameters: list[dict[str, Any]],
    table: Any,
    resolve: Callable[[Mapping[str, Any]], Mapping[str, Any]],
    returns: str,
) -> tuple[str, list[str], str, str, str, str]:
    fields = _fields(spec, op, parameters, resolve)
    extra = {text.split(":")[0]: text for text in table.extra}
    names = [*fields, *extra]
    keywords = list(table.keywords) or [
        *[n for n in fields if fields[n][1] and n not in table.positional],
        *[n for n in names if not (n in fields and fields[n][1]) and n not in table.positional],
    ]

    def param(name: str) -> str:
        if name in extra:
            return extra[name]
        annotation, required = fields[name]
        annotation = table.types.get(name, annotation)
        if required:
            return f"{name}: {annotation}"
        default = table.defaults.get(name, "None")
        return f"{name}: {annotation}{' | None' if default == 'None' else ''} = {default}"

    params = [*(param(n) for n in table.positional), *(["*"] if keywords else []), *map(param, keywords)]
    summary = " ".join(
        part for part in (op.get("summary", ""), op.get("description", ""), table.note) if part
    )
    doc = "\n".join(textwrap.wrap(f"`{verb.upper()} {path}`: {summary}", 96, break_on_hyphens=False))
    arguments = ", ".join(f"{n!r}: {n}" for n in names)
    name = table.name or op["operationId"]
    return name, params, returns, doc, op["operationId"].upper(), arguments


def _fields(
    spec: Mapping[str, Any],
    op: Mapping[str, Any],
    parameters: list[dict[str, Any]],
    resolve: Callable[[Mapping[str, Any]], Mapping[str, Any]],
) -> dict[str, tuple[str, bool]]:
    """name -> (annotation, required) of the path and query parameters, then the JSON body's fields."""
    fields = {
        p["name"]: (_annotation(p.get("schema", {}), resolve), bool(p.get("required"))) for p in parameters
    }
    body = op.get("requestBody", {}).get("content", {}).get("application/json")
    if body is not None:
        schema = resolve(body["schema"])
        required = set(schema.get("required", []))
        for name, sub in schema["properties"].items():
            fields[name] = (_annotation(sub, resolve), name in required)
    return fields


def _annotation(schema: Mapping[str, Any], resolve: Callable[[Mapping[str, Any]], Mapping[str, Any]]) -> str:
    ref = schema.get("$ref") or next((p["$ref"] for p in schema.get("allOf", []) if "$ref" in p), None)
    target = resolve(schema)
    if target.get("type") == "object" and ref is not None:
        return f"models.{ref.rsplit('/', 1)[-1]} | Mapping[str, Any]"
    if "enum" in target:
        return f"Literal[{', '.join(repr(v) for v in target['enum'] if v is not None)}]"
    if target.get("type") == "array":
        return f"Sequence[{_annotation(target['items'], resolve)}]"
    return SCALARS.get(target.get("type", ""), "Any")
