"""The MCP tools of `powercontext mcp`, built from the generated operation table.

A tool is one operation of the contract under its operationId. Its input schema is the JSON Schema of
the operation's generated request model (the body model, or the path and query parameters model), so
it cannot drift from the OpenAPI spec, and the same model validates the arguments before anything is
sent. Results are the generated response models; their serialization schema is the output schema.
This module does not import the MCP SDK: `_mcp_server` turns these specs into SDK types.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from pydantic import BaseModel, ConfigDict

from powercontext_api.operations import BY_ID, Operation

from ._serialize import adapter, dump

PREPARE_TOOL: Final = "prepare_context"
"""The tool whose result is the prepared text itself, not the JSON answer."""

SCOPE_FIELD: Final = "scope_id"
ASSEMBLY_FIELD: Final = "assembly"

# The operations offered as tools, in listing order: prepare, write and correct Memory (an agent may
# fix or erase what it stored: the server decides, by the token's grants), then the reads an agent
# uses to look things up. Scope administration and candidate review stay with people.
TOOL_OPERATIONS: Final = (
    "prepare_context",
    "remember",
    "remember_batch",
    "revise_memory_entry",
    "retire_memory_entry",
    "erase_memory_entry",
    "search_memory",
    "get_memory_entry",
    "get_memory_entry_history",
    "list_memory_entries",
    "search_experience",
    "get_experience",
    "search_topics",
    "get_topic",
    "get_profile",
    "get_artifact_revision",
    "get_scope",
    "list_scopes",
    "get_capabilities",
)

READ_ACCESS: Final = frozenset({"public", "scope.read"})
"""The access a tool's operation declares when it only reads; every other tool changes stored data."""
ERASE_ACCESS: Final = "scope.erase"
"""The access of the one tool that destroys data (erasure); the other writes only add revisions."""


class NoArguments(BaseModel):
    """The arguments of an operation without parameters or body: none."""

    model_config = ConfigDict(extra="forbid")


@dataclass(frozen=True)
class ToolRequest:
    """What `AsyncPowerContextClient.call` sends for one tool call."""

    body: BaseModel | None = None
    path: Mapping[str, str | int] | None = None
    query: Mapping[str, str | int] | None = None


@dataclass(frozen=True)
class ToolSpec:
    """One operation as an MCP tool. `defaults` fill the arguments a call leaves out (argument name
    to value, only names of the arguments model)."""

    operation: Operation[BaseModel]
    description: str
    arguments_model: type[BaseModel]
    input_schema: Mapping[str, Any]
    output_schema: Mapping[str, Any] | None
    read_only: bool
    destructive: bool
    defaults: Mapping[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.operation.operation_id

    def request(self, arguments: Mapping[str, Any]) -> ToolRequest:
        """Validate `arguments` with the request model; raises `pydantic.ValidationError`."""
        given = dict(arguments)
        for name, value in self.defaults.items():
            given.setdefault(name, copy.deepcopy(value))
        validated = adapter(self.arguments_model).validate_python(given)
        if self.operation.body_model is not None:
            return ToolRequest(body=validated)
        # Path and query parameters: only what the caller set, so the server applies its defaults.
        values = dump(validated)
        where = {p.name: p.location for p in self.operation.parameters}
        return ToolRequest(
            path={k: v for k, v in values.items() if where.get(k) == "path"},
            query={k: v for k, v in values.items() if where.get(k) == "query"} or None,
        )


def build_tools(
    default_scope: str | None = None, default_assembly: Mapping[str, Any] | None = None
) -> tuple[ToolSpec, ...]:
    """Every tool of `TOOL_OPERATIONS`. With `default_scope`, `scope_id` is optional and defaults to
    it; with `default_assembly`, so is prepare's `assembly` (None: a call without one is legacy)."""
    defaults: dict[str, Any] = {}
    if default_scope is not None:
        defaults[SCOPE_FIELD] = default_scope
    if default_assembly is not None:
        defaults[ASSEMBLY_FIELD] = dict(default_assembly)
    return tuple(_tool(BY_ID[operation_id], defaults) for operation_id in TOOL_OPERATIONS)


def _tool(operation: Operation[BaseModel], defaults: Mapping[str, Any]) -> ToolSpec:
    model = operation.body_model or operation.parameters_model or NoArguments
    own = {name: value for name, value in defaults.items() if name in model.model_fields}
    return ToolSpec(
        operation=operation,
        description=operation.summary,
        arguments_model=model,
        input_schema=input_schema(model, own),
        # Prepare answers with its text alone (see `_mcp_server`), so it declares no structure.
        output_schema=None
        if operation.operation_id == PREPARE_TOOL
        else operation.response_model.model_json_schema(mode="serialization"),
        read_only=operation.access in READ_ACCESS,
        destructive=operation.access == ERASE_ACCESS,
        defaults=own,
    )


def input_schema(model: type[BaseModel], defaults: Mapping[str, Any]) -> dict[str, Any]:
    """`model`'s JSON Schema, where each argument of `defaults` is optional and shows its default.

    The schema stays self-contained: pydantic puts nested models under `$defs` and refers to them
    with `#/$defs/...`, which every JSON Schema validator (and the MCP SDK) resolves in the document.
    """
    schema = model.model_json_schema()
    properties = schema.get("properties", {})
    given = [name for name in defaults if name in properties]
    for name in given:
        properties[name] = {**properties[name], "default": copy.deepcopy(defaults[name])}
    required = [name for name in schema.get("required", []) if name not in given]
    if required:
        schema["required"] = required
    else:
        # An empty `required` is invalid before draft 6; pydantic leaves it out too.
        schema.pop("required", None)
    return schema
