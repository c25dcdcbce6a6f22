"""The client commands of `powercontext`, one per operation of the generated table.

A command is the client method of its operation with `-` for `_` (`create-scope` is `create_scope`).
The method's required positional arguments are the command's (`SCOPE_ID TEXT`); every other argument
is an option with its name (`--expected-revision N`). Types, choices, bounds and help come from the
JSON Schema of the operation's generated request model; `_conveniences` says where a command gives
an argument otherwise (`-` for standard input, a citation as JSON, `--reference`, ...).
"""

from __future__ import annotations

import argparse
import inspect
import json
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from pydantic import BaseModel

from powercontext_api.operations import OPERATIONS, Operation

from ._cli_output import UsageError
from ._client import PowerContextClient
from ._conveniences import ARGUMENTS, Argument, Method, method, method_name

Run = Callable[[PowerContextClient, argparse.Namespace], Any]
# Integers this large are the contract's "any revision" bound, not one worth printing in help.
_PRINTED_MAXIMUM = 1 << 31


@dataclass(frozen=True)
class Parameter:
    """One argument of a method as the command line gives it."""

    name: str
    positional: bool
    required: bool
    schema: Mapping[str, Any]
    given: Argument


def add_commands(commands: Any, shared: argparse.ArgumentParser) -> None:
    """A subcommand of `commands` for every operation with a client method and no command of its own."""
    for operation in OPERATIONS:
        table = method(operation.operation_id)
        if table.generated and table.command is None:
            _add(commands, shared, operation)


def _add(commands: Any, shared: argparse.ArgumentParser, operation: Operation[BaseModel]) -> None:
    name = method_name(operation.operation_id)
    table = method(operation.operation_id)
    parameters = _parameters(operation, name)
    summary = operation.summary.replace("%", "%%")  # argparse formats help with %
    sub = commands.add_parser(name.replace("_", "-"), help=summary, description=summary, parents=[shared])
    # `--no-X` sends X empty: it and `--X` exclude each other.
    group = sub.add_mutually_exclusive_group() if table.clear else sub
    for parameter in parameters:
        _add_argument(group if parameter.name == table.clear else sub, parameter, table.note)
    if table.clear:
        cleared = next(p for p in parameters if p.name == table.clear)
        listed = cleared.schema.get("type") == "array"
        group.add_argument(
            f"--no-{table.clear.split('_')[-1]}" if listed else f"--no-{table.clear.replace('_', '-')}",
            action="store_true",
            dest=f"no_{table.clear}",
            help=f"Send an empty {table.clear}: remove every one."
            if listed
            else f"Send {table.clear} as null: clear it.",
        )
    if table.confirm:
        sub.add_argument("--yes", action="store_true", help="Confirm; without it nothing is sent.")
    sub.set_defaults(run=partial(_run, name, table, parameters))


def _parameters(operation: Operation[BaseModel], name: str) -> list[Parameter]:
    schemas: dict[str, Any] = {}
    for model in (operation.parameters_model, operation.body_model):
        if model is not None:
            document = model.model_json_schema()
            schemas.update({k: _resolve(document, v) for k, v in document["properties"].items()})
    signature = inspect.signature(getattr(PowerContextClient, name))
    found = []
    for parameter in list(signature.parameters.values())[1:]:
        empty = parameter.default is inspect.Parameter.empty
        positional = parameter.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD and empty
        schema = schemas.get(parameter.name, {"type": "boolean"})  # an argument of the client's own
        given = ARGUMENTS.get(parameter.name, Argument())
        found.append(Parameter(parameter.name, positional, empty, schema, given))
    return found


def _resolve(document: Mapping[str, Any], schema: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = schema.get("$ref")
    if ref is None:
        return schema
    return {**document["$defs"][ref.rsplit("/", 1)[-1]], **{k: v for k, v in schema.items() if k != "$ref"}}


def _add_argument(sub: Any, parameter: Parameter, note: str) -> None:
    """`parameter` on `sub`, a parser or a group of one."""
    schema, given = parameter.schema, parameter.given
    if given.split:
        for part in given.split:
            integer = schema["properties"][part].get("type") == "integer"
            sub.add_argument(
                part, metavar=part.upper(), type=int if integer else str, help=_help(schema, part)
            )
        return
    option = parameter.required and not parameter.positional
    options: dict[str, Any] = {"help": _help(schema, parameter.name, option, given.stdin)}
    if schema.get("type") == "integer":
        options.update(type=int, metavar="N")
    if "enum" in schema:
        options["choices"] = schema["enum"]
    if schema.get("type") == "array":
        options["action"] = "append"
        item = schema.get("items", {}).get("$ref", "/value")  # `SCOPE_ID` for a list of ScopeId
        options["metavar"] = re.sub(r"(?<!^)(?=[A-Z])", "_", item.rsplit("/", 1)[-1]).upper()
    if parameter.positional:
        sub.add_argument(parameter.name, **{**options, "metavar": parameter.name.upper()})
        return
    if schema == {"type": "boolean"}:  # the client's own switch, such as exist_ok
        options = {"action": "store_true", "help": note}
    elif schema.get("type") == "boolean":  # the contract's: --X sends true, --no-X false
        options.update(action=argparse.BooleanOptionalAction, default=None)
    flags = given.flags or (f"--{parameter.name.replace('_', '-')}",)
    sub.add_argument(*flags, dest=parameter.name, required=parameter.required, **options)


def _help(schema: Mapping[str, Any], name: str, required: bool = False, stdin: bool = False) -> str:
    """What the contract says of the argument, with its bounds and the server's default."""
    prop = schema.get("properties", {}).get(name, schema) if "properties" in schema else schema
    words = [prop.get("description") or f"The request's {name.replace('_', ' ')}."]
    low, high = prop.get("minimum"), prop.get("maximum")
    if low is not None and high is not None and high < _PRINTED_MAXIMUM:
        words.append(f"From {low} to {high}.")
    if prop.get("default") not in (None, "", []):
        words.append(f"Server default {prop['default']}.")
    if stdin:
        words.append("- reads it from standard input.")
    if required and not stdin:
        words.append("Required.")
    return " ".join(words).replace("%", "%%")  # argparse formats help with %


def _run(
    name: str, table: Method, parameters: list[Parameter], pc: PowerContextClient, args: argparse.Namespace
) -> Any:
    """Call the method `name` with the arguments of the command line."""
    if table.confirm and not args.yes:
        raise UsageError(f"{table.confirm}: add --yes to confirm")
    from_stdin = [p.name.upper() for p in parameters if p.given.stdin and getattr(args, p.name) == "-"]
    if len(from_stdin) > 1:
        raise UsageError(f"{' and '.join(from_stdin)} cannot both be read from standard input")
    positional: list[Any] = []
    keywords: dict[str, Any] = {}
    for parameter in parameters:
        value = _value(parameter, args)
        if parameter.name == table.clear and getattr(args, f"no_{table.clear}"):
            keywords[parameter.name] = [] if parameter.schema.get("type") == "array" else None
        elif parameter.positional:
            positional.append(value)
        elif value is not None:  # left out: the method's default (not sent, or kept)
            keywords[parameter.name] = value
    return getattr(pc, name)(*positional, **keywords)


def _value(parameter: Parameter, args: argparse.Namespace) -> Any:
    given = parameter.given
    if given.split:
        family = parameter.schema["properties"]["family"]
        values = {part: getattr(args, part) for part in given.split}
        return {"family": family.get("const") or family["enum"][0], **values}
    value = getattr(args, parameter.name)
    if given.stdin and value == "-":
        value = sys.stdin.read()
    return json_object(parameter.name, value) if given.json else value


def json_object(name: str, text: str) -> dict[str, Any]:
    """`text` as a JSON object: the `name` object itself, or an answer holding one under `name`."""
    metavar = name.upper()
    try:
        data = json.loads(text)
    except ValueError:
        raise UsageError(
            f"{metavar} must be JSON: the {name} object, or an entry holding one (remember --json)"
        ) from None
    if isinstance(data, dict) and isinstance(data.get(name), dict):
        data = data[name]
    if not isinstance(data, dict):
        raise UsageError(f"{metavar} must be a JSON object")
    return data
