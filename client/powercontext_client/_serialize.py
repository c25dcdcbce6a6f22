"""Wire serialisation: generated models in, JSON bytes out, and back.

Requests are generated pydantic models dumped with
`TypeAdapter(Model).dump_python(model, mode="json", by_alias=True, exclude_unset=True)`.
Optional fields use pydantic's `MISSING` sentinel, so an omitted field is never dumped;
`exclude_unset` also keeps fields with a schema default (`max_bytes`, `limit`) off the wire unless
the caller set them, so the server applies its own default. One `TypeAdapter` per model is built
on first use and reused.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError

from ._errors import InvalidArgumentError
from ._messages import validation_summary

ModelT = TypeVar("ModelT", bound=BaseModel)


_adapters: dict[type[Any], TypeAdapter[Any]] = {}
_adapters_lock = threading.Lock()


def adapter(model: type[ModelT]) -> TypeAdapter[ModelT]:
    """The cached `TypeAdapter` for `model`."""
    found = _adapters.get(model)
    if found is None:
        with _adapters_lock:
            found = _adapters.get(model)
            if found is None:
                found = _adapters[model] = TypeAdapter(model)
    return found


def validate(model: type[ModelT], data: Any) -> ModelT:
    """`data` as the request model `model`.

    Raises `InvalidArgumentError`, with pydantic's error as its cause, when a value breaks the
    contract: callers catch the client's errors, not its validation library's.
    """
    try:
        return adapter(model).validate_python(data)
    except ValidationError as exc:
        raise InvalidArgumentError(validation_summary(exc)) from exc


def build(model: type[ModelT], **fields: Any) -> ModelT:
    """Validate a request model from the fields the caller set; `None` means "not set"."""
    return validate(model, {k: v for k, v in fields.items() if v is not None})


def dump(value: BaseModel) -> dict[str, Any]:
    """The JSON-ready dict for a request model: aliases applied, unset fields left out."""
    dumped: dict[str, Any] = adapter(type(value)).dump_python(
        value, mode="json", by_alias=True, exclude_unset=True
    )
    return dumped


def dump_free(value: BaseModel | Mapping[str, Any] | None) -> Any:
    """A caller-supplied object sent as given: a model is dumped, a mapping copied, `None` is null."""
    if value is None:
        return None
    if isinstance(value, BaseModel):
        return dump(value)
    return dict(value)


def encode(body: Mapping[str, Any]) -> bytes:
    """Compact UTF-8 JSON; NaN and infinities are refused rather than sent as invalid JSON."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


def parse(model: type[ModelT], content: bytes) -> ModelT:
    """Validate a response body as `model`; raises `pydantic.ValidationError` on a mismatch."""
    return adapter(model).validate_json(content)
