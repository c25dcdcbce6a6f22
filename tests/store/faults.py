"""A backend double for injected faults: the wrapped backend, but inserts into one table fail."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from powercontext_runtime.store.backends import Backend, Conn, Cursor
from powercontext_runtime.store.conn import Statement


@dataclass(frozen=True)
class FailingBackend:
    """The wrapped backend, but the first insert into `table` fails as a full disk would."""

    inner: Backend
    table: str

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def connect(self) -> Conn:
        return _FailingConn(self.inner.connect(), self.table)

    # The backend's own calls get its own connection back.
    def begin(self, conn: _FailingConn, write: bool) -> None:
        self.inner.begin(conn.inner, write)

    def commit(self, conn: _FailingConn) -> None:
        self.inner.commit(conn.inner)

    def rollback(self, conn: _FailingConn) -> None:
        self.inner.rollback(conn.inner)

    def close(self, conn: _FailingConn) -> None:
        self.inner.close(conn.inner)


@dataclass(frozen=True)
class _FailingConn:
    inner: Conn
    table: str

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def executemany(self, sql: str, params: Any) -> Cursor:
        self._fail_on(sql)
        return self.inner.executemany(sql, params)

    def execute_all(self, statements: Sequence[Statement]) -> None:
        for sql, _ in statements:
            self._fail_on(sql)
        self.inner.execute_all(statements)

    def _fail_on(self, sql: str) -> None:
        if sql.startswith(f"INSERT INTO {self.table} "):
            raise sqlite3.OperationalError("database or disk is full (injected)")
