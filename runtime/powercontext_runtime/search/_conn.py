"""The connection search runs its SQL on: the subset of DB-API it uses, with `?` parameters.

Search sits below the store, so the protocol lives here; the store's backends implement it and
re-export it (`store/conn.py`) for their own SQL modules.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Protocol


class Cursor(Protocol):
    @property
    def lastrowid(self) -> int | None: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> Sequence[Any]: ...

    def fetchmany(self, size: int) -> Sequence[Any]: ...

    @property
    def description(self) -> Sequence[Sequence[Any]]: ...

    def __iter__(self) -> Iterator[Any]: ...


# A statement with its parameter rows: run once per row (an INSERT: one multi-row statement).
Statement = tuple[str, Sequence[Sequence[object]]]
# A query with its parameters.
Query = tuple[str, Sequence[object]]


class Conn(Protocol):
    """The part of a DB-API connection search and the store use, with `?` parameters whatever the driver."""

    def execute(self, sql: str, params: Sequence[object] = ()) -> Cursor: ...

    def executemany(self, sql: str, params: Iterable[Sequence[object]]) -> Cursor: ...

    def execute_all(self, statements: Sequence[Statement]) -> None:
        """Run the statements in order, reading no answers: on OceanBase in one round trip, sent
        with the transaction's next statement or its COMMIT (a failing statement raises there,
        and the ones after it do not run). Only inside a transaction."""
        ...

    def read_all(self, queries: Sequence[Query]) -> list[Sequence[Any]]:
        """Each query's rows, in order: on OceanBase all in one round trip (none needs another's
        answer to be written)."""
        ...

    def stream(self, sql: str) -> Cursor:
        """A query whose rows arrive as they are fetched, not all at once (read them all before
        the next statement on this connection)."""
        ...


def marks(values: Sequence[object]) -> str:
    """The `?` placeholders of an `IN (...)` list of `values`."""
    return ", ".join("?" * len(values))
