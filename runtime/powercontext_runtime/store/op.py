"""A store operation is its family function of an open `Conn`, marked with how the store runs it.

The family modules (`scopes`, `memory`, `candidates`, `topics`, `artifacts`) mark each operation
`@reads`, `@writes`, `@erases` or `@writes_after(prepare)`, and `Store.run(op, *args)` runs it in
one transaction of that kind: the signature is written once, in the family module, and the kind
travels with the SQL that needs it, so a caller cannot run a write in a read transaction or forget
to free an erasure's pages.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Concatenate, Generic, ParamSpec, TypeVar

from .conn import Conn

P = ParamSpec("P")
R = TypeVar("R")
X = TypeVar("X")


@dataclass(frozen=True)
class StoreOp(Generic[P, R]):
    """`start(*args)` runs outside any transaction and returns the step the store runs inside one."""

    start: Callable[P, Callable[[Conn], R]]
    write: bool
    purge: bool  # free the pages an erasure left, after it commits


def _starter(fn: Callable[Concatenate[Conn, P], R]) -> Callable[P, Callable[[Conn], R]]:
    def start(*args: P.args, **kwargs: P.kwargs) -> Callable[[Conn], R]:
        return lambda conn: fn(conn, *args, **kwargs)

    return start


def reads(fn: Callable[Concatenate[Conn, P], R]) -> StoreOp[P, R]:
    """Runs in a read transaction (inside `Store.reading()`, that block's snapshot)."""
    return StoreOp(_starter(fn), write=False, purge=False)


def writes(fn: Callable[Concatenate[Conn, P], R]) -> StoreOp[P, R]:
    """Runs in a write transaction, behind the writer gate."""
    return StoreOp(_starter(fn), write=True, purge=False)


def erases(fn: Callable[Concatenate[Conn, P], R]) -> StoreOp[P, R]:
    """A write that deletes data: once committed, the freed pages are purged."""
    return StoreOp(_starter(fn), write=True, purge=True)


def writes_after(
    prepare: Callable[P, X],
) -> Callable[[Callable[Concatenate[Conn, X, P], R]], StoreOp[P, R]]:
    """A write whose CPU-bound part, `prepare(*args)`, runs before the transaction (so before the
    write lock) and reaches the family function as its argument after `conn`."""

    def mark(fn: Callable[Concatenate[Conn, X, P], R]) -> StoreOp[P, R]:
        def start(*args: P.args, **kwargs: P.kwargs) -> Callable[[Conn], R]:
            prepared = prepare(*args, **kwargs)
            return lambda conn: fn(conn, prepared, *args, **kwargs)

        return StoreOp(start, write=True, purge=False)

    return mark
