"""Typed Runtime failures. The HTTP edge maps each class to one status and body, in one place."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class ErrorItem:
    """One validation problem, pydantic-shaped; never carries the offending value."""

    type: str
    loc: tuple[str | int, ...]
    msg: str


class PowerContextError(Exception):
    """Base of every failure the Runtime reports on purpose."""


class InvalidRequest(PowerContextError):
    def __init__(self, errors: Sequence[ErrorItem]) -> None:
        super().__init__("The request violates the API contract.")
        self.errors: tuple[ErrorItem, ...] = tuple(errors)

    @classmethod
    def single(cls, type_: str, loc: tuple[str | int, ...], msg: str) -> InvalidRequest:
        return cls([ErrorItem(type_, loc, msg)])


class ScopeNotFound(PowerContextError):
    """The Scope does not exist (or, with access control, must look as if it does not)."""


class EntryNotFound(PowerContextError):
    """A citation names no stored item in an existing Scope."""


class EntryErased(PowerContextError):
    """A citation names an entry that was erased: every version of it is gone for good."""


class ScopeReferenced(PowerContextError):
    """A Scope another Scope lists among its Context References cannot be erased."""


class ScopeAlreadyExists(PowerContextError):
    """`create_scope` with an id that is taken."""


class RevisionConflict(PowerContextError):
    """A stale `expected_revision`/`expected_version`, or a citation that is not the current head."""

    def __init__(self, message: str = "The expected revision or version is stale.") -> None:
        super().__init__(message)
        self.message = message


class RetrievalUnavailable(PowerContextError):
    """A configured storage or retrieval service failed; never turned into an empty success."""


class InvalidExport(PowerContextError):
    """An import stream that is not an export this release can import (not one at all, another
    format version, a line outside the contract's bounds, cut off, inconsistent); nothing was
    written. `line` is the line at fault when there is one; `model` and `errors` are the contract's
    schema for that line and pydantic's report against it, when that is what refused it."""

    def __init__(
        self, message: str, line: int | None = None, model: Any = None, errors: Sequence[Any] = ()
    ) -> None:
        super().__init__(message)
        self.line = line
        self.model = model
        self.errors = tuple(errors)
