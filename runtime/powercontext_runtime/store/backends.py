"""What differs between SQLite and OceanBase (MySQL mode): connecting, transactions, SQL spelling.

The store writes every statement once, in SQLite's spelling with `?` parameters. A backend turns it
into its own: SQLite drops the `FOR UPDATE` of locking reads (its write transactions already hold
the database lock), MySQL mode spells upserts `ON DUPLICATE KEY UPDATE` and parameters `%s`.

An OceanBase server that stops answering must not hang requests. Opening a connection (TCP, login,
session setup) and the first round trip of every transaction (`begin`) wait at most
`connect_timeout`, 1 s by default: a request that starts while the server is down or hung fails
with `RetrievalUnavailable` (503) within about that. The statements inside a transaction, and its
commit, may wait `read_timeout`, 30 s by default: three times OceanBase's own default statement
limit (`ob_query_timeout`, 10 s), so a heavy statement that the server is willing to run (a
migration, a `copy-store` batch, a search mirror rebuild) ends, or fails with the server's own
error, before the client gives up; only a server that stopped mid-transaction makes it wait that
long. Both are settings of the database URL (`?connect_timeout=1&read_timeout=30`, seconds).
A connection found dead when a transaction begins (the server was restarted since it was last used)
is replaced once, at once, so the first requests after the database returns succeed.
"""

from __future__ import annotations

import logging
import re
import sqlite3
import time
from collections.abc import Iterable, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import parse_qsl, unquote, urlsplit

from . import mysql_pipeline, mysql_schema, sqlite_schema
from .conn import Conn as Conn  # re-exported: older callers import the protocols from here
from .conn import Cursor as Cursor
from .conn import Query, Statement
from .migrations import Migration
from .sqlite_checkpoint import AUTOCHECKPOINT_BACKSTOP_PAGES, WAL_CEILING_BYTES, WalCheckpointer

logger = logging.getLogger("powercontext.store")


class Backend(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def migrations(self) -> tuple[Migration, ...]: ...

    @property
    def list_tables(self) -> str:
        """A query of the names of the tables in this database."""
        ...

    @property
    def errors(self) -> tuple[type[Exception], ...]:
        """The driver's failures: the storage service is unavailable."""

    @property
    def duplicate_key(self) -> type[Exception]: ...

    @property
    def merge_pause_max_s(self) -> float:
        """How long the index merger leaves the write lock free after each chunk, at most (as long
        as the chunk held it): other processes' writers' turn, where the lock does not queue them."""
        ...

    @property
    def reads_in_process(self) -> bool:
        """Whether a read is this process's own CPU work (an embedded database) rather than a wait
        on a database server: the server runs such reads one at a time (server/threads.py)."""
        ...

    def connect(self) -> Conn: ...

    def begin(self, conn: Conn, write: bool) -> None: ...

    def commit(self, conn: Conn) -> None: ...

    def rollback(self, conn: Conn) -> None: ...

    def close(self, conn: Conn) -> None: ...

    def purge(self, conn: Conn) -> None:
        """After an erasure committed, outside any transaction: make the deleted bytes leave the
        database's files as far as this backend can."""

    def stop(self) -> None:
        """After the last connection closed: end anything the backend runs on its own."""


# SQLite -------------------------------------------------------------------------------------------

_BUSY_TIMEOUT_MS = 10_000
_PURGE_RETRY_S = 0.005


class _SqliteConn:
    def __init__(self, raw: sqlite3.Connection) -> None:
        self.raw = raw
        self.writing = False
        self._sql: dict[str, str] = {}

    def _spell(self, sql: str) -> str:
        spelled = self._sql.get(sql)
        if spelled is None:
            spelled = self._sql[sql] = sql.replace(" FOR UPDATE", "")
        return spelled

    def execute(self, sql: str, params: Sequence[object] = ()) -> Cursor:
        return self.raw.execute(self._spell(sql), params)

    def executemany(self, sql: str, params: Iterable[Sequence[object]]) -> Cursor:
        return self.raw.executemany(self._spell(sql), params)

    def execute_all(self, statements: Sequence[Statement]) -> None:
        for sql, rows in statements:
            self.raw.executemany(self._spell(sql), rows)

    def read_all(self, queries: Sequence[Query]) -> list[Sequence[Any]]:
        return [self.raw.execute(self._spell(sql), params).fetchall() for sql, params in queries]

    def stream(self, sql: str) -> Cursor:
        return self.raw.execute(self._spell(sql))  # SQLite steps through rows as they are fetched


@dataclass(frozen=True)
class SqliteBackend:
    path: str
    name: str = "sqlite"
    migrations: tuple[Migration, ...] = sqlite_schema.MIGRATIONS
    list_tables: str = "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
    errors: tuple[type[Exception], ...] = (sqlite3.Error,)
    duplicate_key: type[Exception] = sqlite3.IntegrityError
    # Another process's writer waits in SQLite's busy handler, which retries only now and then (up
    # to 100 ms apart) and lost every race to the next chunk: a long merge kept it out for all its
    # length, and a remember failed with a 503 after 10 s.
    merge_pause_max_s: float = 0.025
    reads_in_process: bool = True
    checkpointer: WalCheckpointer | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            object.__setattr__(self, "checkpointer", WalCheckpointer(self.path, _BUSY_TIMEOUT_MS / 1000))

    def connect(self) -> Conn:
        # check_same_thread=False only so close() can run from the shutdown thread; each
        # connection is otherwise used by the one thread that opened it.
        raw = sqlite3.connect(
            self.path, isolation_level=None, timeout=_BUSY_TIMEOUT_MS / 1000, check_same_thread=False
        )
        for pragma in (
            "journal_mode=WAL",
            "synchronous=NORMAL",
            f"wal_autocheckpoint={AUTOCHECKPOINT_BACKSTOP_PAGES}",
            # A log started over is cut back to this (see sqlite_checkpoint.py).
            f"journal_size_limit={WAL_CEILING_BYTES}",
            "foreign_keys=ON",
            # Deleted rows are overwritten with zeros, so an erased text leaves the file's pages.
            "secure_delete=ON",
            f"busy_timeout={_BUSY_TIMEOUT_MS}",
        ):
            raw.execute(f"PRAGMA {pragma}")
        return _SqliteConn(raw)

    def begin(self, conn: Conn, write: bool) -> None:
        # IMMEDIATE takes the write lock up front (no lock upgrades); a plain BEGIN is a read snapshot.
        assert isinstance(conn, _SqliteConn)
        conn.writing = write
        if write and self.checkpointer is not None:
            self.checkpointer.before_write()
        conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")

    def commit(self, conn: Conn) -> None:
        assert isinstance(conn, _SqliteConn)
        conn.execute("COMMIT")
        if conn.writing and self.checkpointer is not None:
            self.checkpointer.nudge()

    def rollback(self, conn: Conn) -> None:
        assert isinstance(conn, _SqliteConn)
        if conn.raw.in_transaction:
            conn.raw.execute("ROLLBACK")

    def close(self, conn: Conn) -> None:
        assert isinstance(conn, _SqliteConn)
        conn.raw.close()

    def purge(self, conn: Conn) -> None:
        """Copy the log into the database and truncate it: its frames still hold the pages as they
        were before the erasure. Waits for readers up to the busy timeout; if they outlast it, the
        next erasure's checkpoint takes the frames with it. Another checkpoint under way (the
        background checkpointer's, nudged by the writes before) makes SQLite answer busy at once,
        without waiting: that is tried again until it is done."""
        assert isinstance(conn, _SqliteConn)
        deadline = time.monotonic() + _BUSY_TIMEOUT_MS / 1000
        while conn.raw.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]:
            if time.monotonic() >= deadline:
                logger.warning("the write-ahead log could not be truncated after an erasure: readers stayed")
                return
            time.sleep(_PURGE_RETRY_S)

    def stop(self) -> None:
        if self.checkpointer is not None:
            self.checkpointer.stop()


def sqlite_path_from_url(url: str) -> str:
    """`sqlite:///relative.db` or `sqlite:////absolute.db` → a filesystem path."""
    prefix = "sqlite:///"
    if not url.startswith(prefix) or len(url) == len(prefix):
        raise ValueError("A SQLite URL looks like sqlite:///path/to/file.sqlite3")
    return url[len(prefix) :]


# OceanBase (MySQL mode) ---------------------------------------------------------------------------

_UPSERT = re.compile(r"ON CONFLICT \([^)]*\) DO UPDATE SET")
_EXCLUDED = re.compile(r"excluded\.(\w+)")


def mysql_spelling(sql: str) -> str:
    """SQLite spelling → MySQL spelling, for the statements this store writes."""
    sql = _UPSERT.sub("ON DUPLICATE KEY UPDATE", sql)
    sql = _EXCLUDED.sub(r"VALUES(\1)", sql)
    return sql.replace("%", "%%").replace("?", "%s")


class _MysqlConn:
    """A session, and the write statements `execute_all` holds back: they need no answer, so
    they go with whatever the transaction sends next, its COMMIT included (a round trip less)."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw
        self._sql: dict[str, str] = {}
        self._held: list[str] = []

    def _spell(self, sql: str) -> str:
        spelled = self._sql.get(sql)
        if spelled is None:
            spelled = self._sql[sql] = mysql_spelling(sql)
        return spelled

    def execute(self, sql: str, params: Sequence[object] = ()) -> Cursor:
        self.send_held()
        cursor = self.raw.cursor()
        cursor.execute(self._spell(sql), tuple(params))
        return cursor  # type: ignore[no-any-return]

    def executemany(self, sql: str, params: Iterable[Sequence[object]]) -> Cursor:
        self.send_held()
        cursor = self.raw.cursor()
        rows = [tuple(p) for p in params]
        if rows:
            cursor.executemany(self._spell(sql), rows)
        return cursor  # type: ignore[no-any-return]

    def execute_all(self, statements: Sequence[Statement]) -> None:
        self.send_held()
        cursor = self.raw.cursor()
        rendered = (
            statement
            for sql, rows in statements
            for statement in mysql_pipeline.statements(cursor, self._spell(sql), rows)
        )
        self._held = list(mysql_pipeline.queries(rendered))

    def send_held(self, then: str | None = None) -> None:
        """Send the held statements, the last query with `then` after it (one more statement in
        the same round trip); `then` alone when none are held. The server stops at the first
        statement that fails (`then` is not run), and its error is raised here."""
        held, self._held = self._held, []
        if then is not None:
            held = [*held[:-1], f"{held[-1]};{then}"] if held else [then]
        if held:
            cursor = self.raw.cursor()
            for query in held:
                mysql_pipeline.run(cursor, query)

    def drop_held(self) -> None:
        self._held = []

    def read_all(self, queries: Sequence[Query]) -> list[Sequence[Any]]:
        """The queries as one multi-statement query, each one's rows read from its own result set."""
        self.send_held()
        cursor = self.raw.cursor()
        # Rendered by pymysql's own escaping; sent without parameters, so nothing is formatted again.
        cursor.execute(";".join(cursor.mogrify(self._spell(sql), tuple(params)) for sql, params in queries))
        found = [cursor.fetchall()]
        while cursor.nextset():
            found.append(cursor.fetchall())
        return found

    def stream(self, sql: str) -> Cursor:
        import pymysql

        self.send_held()
        cursor = self.raw.cursor(pymysql.cursors.SSCursor)  # unbuffered: rows as they arrive
        cursor.execute(self._spell(sql))
        return cursor  # type: ignore[no-any-return]


# Seconds. See the module docstring: connecting and beginning a transaction, then everything else.
DEFAULT_CONNECT_TIMEOUT_S = 1.0
DEFAULT_READ_TIMEOUT_S = 30.0
_TIMEOUT_PARAMETERS = ("connect_timeout", "read_timeout")
_URL_PARAMETERS = (*_TIMEOUT_PARAMETERS, "charset")


@dataclass(frozen=True)
class MysqlTarget:
    host: str
    port: int
    user: str
    password: str = ""
    database: str = ""
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT_S
    read_timeout: float = DEFAULT_READ_TIMEOUT_S


def mysql_target_from_url(url: str) -> MysqlTarget:
    """`mysql+pymysql://user:password@host:port/database` (the password may be empty), optionally
    followed by `?connect_timeout=S&read_timeout=S` (seconds, positive) and `charset=utf8mb4`."""
    parts = urlsplit(url)
    if parts.scheme not in ("mysql", "mysql+pymysql", "mysql+oceanbase") or not parts.hostname:
        raise ValueError("An OceanBase URL looks like mysql+pymysql://user:password@host:port/database")
    database = parts.path.lstrip("/")
    if not database:
        raise ValueError("The OceanBase URL must name a database: mysql+pymysql://user@host:port/database")
    timeouts = {"connect_timeout": DEFAULT_CONNECT_TIMEOUT_S, "read_timeout": DEFAULT_READ_TIMEOUT_S}
    for name, raw in parse_qsl(parts.query, keep_blank_values=True):
        if name == "charset":
            _check_charset(raw)
        elif name in _TIMEOUT_PARAMETERS:
            timeouts[name] = _seconds(name, raw)
        else:
            raise ValueError(
                f"The OceanBase URL has an unknown parameter {name!r}; it accepts "
                + ", ".join(_URL_PARAMETERS)
                + "."
            )
    return MysqlTarget(
        host=parts.hostname,
        port=parts.port or 2881,
        user=unquote(parts.username or "root"),
        password=unquote(parts.password or ""),
        database=database,
        connect_timeout=timeouts["connect_timeout"],
        read_timeout=timeouts["read_timeout"],
    )


def _check_charset(raw: str) -> None:
    """Most MySQL and OceanBase URLs say `?charset=utf8mb4`, which is what every connection uses
    anyway. Any other character set would corrupt text outside it (MySQL's `utf8` holds no 4-byte
    characters such as emoji), so it stops the server instead of being ignored."""
    if raw.lower() != "utf8mb4":
        raise ValueError(
            "The OceanBase URL's charset must be utf8mb4 (or left out): PowerContext stores any Unicode "
            "text, which no other character set holds."
        )


def _seconds(name: str, raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if not 0 < value <= 86_400:  # also refuses nan and inf
        raise ValueError(f"The OceanBase URL's {name} must be a number of seconds above 0 (at most 86400).")
    return value


def _wait(raw: Any, seconds: float) -> None:
    """How long a pymysql connection waits for each packet it sends or awaits from now on. pymysql
    reads these two attributes before every packet (it has no public setter); kept equal, they
    cost one `settimeout` when they change and none per packet."""
    raw._read_timeout = raw._write_timeout = seconds


def _lost_at_once(exc: Exception, raw: Any) -> bool:
    """The connection turned out closed, and not by a timeout: its server went away since it was
    last used (it was restarted or killed), rather than being slow or hung now."""
    return not raw.open and not isinstance(exc.__context__, TimeoutError)


@dataclass(frozen=True)
class MysqlBackend:
    target: MysqlTarget
    name: str = "oceanbase"
    migrations: tuple[Migration, ...] = mysql_schema.MIGRATIONS
    list_tables: str = "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE()"
    errors: tuple[type[Exception], ...] = ()
    duplicate_key: type[Exception] = Exception
    merge_pause_max_s: float = 0.0  # row locks queue waiting writers: the next chunk waits its turn
    reads_in_process: bool = False

    def __post_init__(self) -> None:
        import pymysql

        # The driver is imported only by deployments that use it.
        object.__setattr__(self, "errors", (pymysql.err.Error,))
        object.__setattr__(self, "duplicate_key", pymysql.err.IntegrityError)

    def connect(self) -> Conn:
        return _MysqlConn(self._open())

    def _open(self) -> Any:
        """A session, every step of which (TCP, login, setup) waits at most `connect_timeout`."""
        import pymysql
        from pymysql.constants import CLIENT

        short = self.target.connect_timeout
        raw = pymysql.connect(
            host=self.target.host,
            port=self.target.port,
            user=self.target.user,
            password=self.target.password,
            database=self.target.database,
            charset="utf8mb4",
            autocommit=True,
            connect_timeout=short,
            read_timeout=short,
            write_timeout=short,
            # For `execute_all`: a write's statements in one round trip (mysql_pipeline.py).
            client_flag=CLIENT.MULTI_STATEMENTS,
        )
        try:
            with raw.cursor() as cursor:
                cursor.execute("SET SESSION time_zone = '+00:00'")
        except BaseException:
            if raw.open:
                with suppress(pymysql.err.Error):
                    raw.close()
            raise
        _wait(raw, self.target.read_timeout)  # statements outside `begin` (copy-store's) wait as long
        return raw

    def begin(self, conn: Conn, write: bool) -> None:
        """Start a transaction, waiting at most `connect_timeout` for the server's answer; the
        transaction's statements then wait up to `read_timeout`. A connection found closed at once
        (its server went away and came back since) is replaced by a new one, once."""
        assert isinstance(conn, _MysqlConn)
        try:
            self._start(conn.raw, write)
        except self.errors as exc:
            if not _lost_at_once(exc, conn.raw):
                raise
            conn.raw = self._open()
            self._start(conn.raw, write)

    def _start(self, raw: Any, write: bool) -> None:
        _wait(raw, self.target.connect_timeout)
        if write:
            # READ COMMITTED (the session's level): a write reads what it locked, as of now.
            raw.begin()
        else:
            # A read sees one snapshot throughout, as SQLite's read transactions do; both
            # statements in one round trip.
            with raw.cursor() as cursor:
                mysql_pipeline.run(
                    cursor, "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ;START TRANSACTION READ ONLY"
                )
        _wait(raw, self.target.read_timeout)

    def commit(self, conn: Conn) -> None:
        """COMMIT, after the statements `execute_all` held back, in their round trip."""
        assert isinstance(conn, _MysqlConn)
        conn.send_held(then="COMMIT")

    def rollback(self, conn: Conn) -> None:
        assert isinstance(conn, _MysqlConn)
        conn.drop_held()  # never sent, so nothing of them to undo
        conn.raw.rollback()

    def close(self, conn: Conn) -> None:
        assert isinstance(conn, _MysqlConn)
        conn.raw.close()

    def purge(self, conn: Conn) -> None:
        """Nothing to do from a session: OceanBase drops deleted rows' older versions from its
        data files at its next major compaction (see docs/erasure.md)."""

    def stop(self) -> None:
        """Nothing runs on its own: the server does its own housekeeping."""
