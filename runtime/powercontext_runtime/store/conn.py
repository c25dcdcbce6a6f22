"""The connection every SQL module of the store takes: DB-API's subset it uses, with `?` parameters.

Its own module, imported by everything and importing nothing of the store, so that the schema,
search and per-family modules need not import `backends` (which imports the schemas).
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


class Conn(Protocol):
    """The part of a DB-API connection the store uses, with `?` parameters whatever the driver."""

    def execute(self, sql: str, params: Sequence[object] = ()) -> Cursor: ...

    def executemany(self, sql: str, params: Iterable[Sequence[object]]) -> Cursor: ...

    def stream(self, sql: str) -> Cursor:
        """A query whose rows arrive as they are fetched, not all at once (read them all before
        the next statement on this connection)."""
        ...
