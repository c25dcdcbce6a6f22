"""The Runtime's grant check (`powercontext_runtime.operation`), made early at the HTTP edge.

The Runtime checks the action an operation declares on the Scope its request addresses, once the
request is parsed. The same decision can be made before the body is parsed: the path names the
Scope, or the body's `scope_id` does, which can be read without validating (or building errors
for) the rest. So a caller without the grant gets its 403 without making the server parse a large
or hostile body.
"""

from __future__ import annotations

from typing import Any, cast

from pydantic_core import SchemaValidator, ValidationError, core_schema

from powercontext_api.operations import Operation
from powercontext_runtime import Action, Principal

# Reads `scope_id` and skips everything else: far cheaper than building a body's errors.
_SCOPE_ID_ONLY = SchemaValidator(
    core_schema.typed_dict_schema(
        {"scope_id": core_schema.typed_dict_field(core_schema.any_schema(), required=False)},
        extra_behavior="ignore",
    )
)


def require_grant(operation: Operation[Any], principal: Principal | None, scope_id: object) -> None:
    """`Forbidden` unless `principal` may do the operation's action on `scope_id` (when it names one)."""
    if principal is not None and operation.access != "public" and isinstance(scope_id, str):
        principal.require(cast(Action, operation.access), [scope_id])


def scope_named_in(raw: bytes) -> object:
    """The top-level `scope_id` of a JSON body, whatever else it holds; None when there is none."""
    try:
        found = _SCOPE_ID_ONLY.validate_json(raw)
    except ValidationError:
        return None
    return found.get("scope_id")
