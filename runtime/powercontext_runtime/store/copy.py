"""Copy every row of one store into an empty one: how a deployment moves from the embedded SQLite
file to OceanBase (or back), keys and all, without replaying its history through the API.

The source is read in one read transaction, so the copy is one consistent snapshot even if the
source is in use. The target must be empty and must not be served while the copy runs; it is
written in batches of multi-row inserts (one round trip per batch on OceanBase), committed every
`COMMIT_ROWS`. If any step fails, the rows already copied are deleted again, so a failed copy leaves
the target empty, as it was.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass

from ..errors import PowerContextError
from .backends import Backend
from .conn import Conn
from .progress import Progress
from .sql_store import SqlStore

# Parents before children, as the foreign keys require. A table the schema gains must be added
# here: a copy refuses a schema whose tables differ from this list.
TABLES = (
    "scopes",
    "scope_references",
    "scope_counters",
    "memory_revisions",
    "memory_entries",
    "memory_entry_versions",
    "memory_vectors",
    "memory_vector_removals",
    "memory_erasures",
    "artifact_revisions",
    "artifact_heads",
    "artifact_vectors",
    "artifact_vector_removals",
    "candidates",
    "search_docs",
    "search_doc_lists",
    "search_segments",
    "search_runs",
    "search_run_sizes",
    "search_stats",
    "search_log",
    "search_pending",
    "search_merges",
    "search_merge_sources",
)
_BOOKKEEPING = "schema_migrations"
# Rows per multi-row INSERT, and per committed transaction of the target.
BATCH_ROWS = 1000
COMMIT_ROWS = 50_000


class CopyRefused(PowerContextError):
    """The copy cannot start: the stores' schemas differ or the target already holds data."""


class CopyFailed(PowerContextError):
    """A database error stopped the copy; `emptied` tells whether the target is empty again."""

    def __init__(self, cause: Exception, emptied: bool) -> None:
        super().__init__(f"The copy failed ({type(cause).__name__}: {cause}).")
        self.emptied = emptied


@dataclass(frozen=True, slots=True)
class CopyReport:
    rows: dict[str, int]  # table → rows copied, in copy order
    seconds: float


def copy_store(source: Backend, target: Backend, progress: Progress | None = None) -> CopyReport:
    """Copy all of `source` into the empty `target`; both are brought to the current schema first."""
    for backend in (source, target):
        SqlStore(backend).close()  # applies any pending migration, then lets go
    started = time.perf_counter()
    with _connection(source) as reader, _connection(target) as writer:
        source.begin(reader, write=False)
        try:
            _check_compatible((reader, source), (writer, target))
            rows = _copy_tables(reader, writer, target, source.errors + target.errors, progress)
        finally:
            with suppress(*source.errors):
                source.rollback(reader)
    return CopyReport(rows, time.perf_counter() - started)


@contextmanager
def _connection(backend: Backend) -> Iterator[Conn]:
    conn = backend.connect()
    try:
        yield conn
    finally:
        with suppress(*backend.errors):
            backend.close(conn)


def _schema_version(conn: Conn) -> int:
    return int(conn.execute(f"SELECT MAX(version) FROM {_BOOKKEEPING}").fetchone()[0] or 0)


def _check_compatible(source: tuple[Conn, Backend], target: tuple[Conn, Backend]) -> None:
    (reader, _), (writer, _) = source, target
    source_version, target_version = _schema_version(reader), _schema_version(writer)
    if source_version != target_version:
        raise CopyRefused(
            f"The source is at schema version {source_version} and the target at {target_version}; "
            "both must be at the version this release creates."
        )
    expected = {*TABLES, _BOOKKEEPING}
    for side, (conn, backend) in (("source", source), ("target", target)):
        found = {str(row[0]) for row in conn.execute(backend.list_tables).fetchall()}
        if found != expected:
            unknown, missing = sorted(found - expected), sorted(expected - found)
            raise CopyRefused(
                f"The {side} database's tables are not exactly this release's"
                + (f"; unknown: {', '.join(unknown)}" if unknown else "")
                + (f"; missing: {', '.join(missing)}" if missing else "")
                + ". Copy between databases that hold PowerContext's tables only."
            )
    occupied = [t for t in TABLES if writer.execute(f"SELECT 1 FROM {t} LIMIT 1").fetchone() is not None]
    if occupied:
        raise CopyRefused(
            f"The target already holds data (in {', '.join(occupied)}); copy into an empty database."
        )


def _copy_tables(
    reader: Conn,
    writer: Conn,
    target: Backend,
    failures: tuple[type[Exception], ...],
    progress: Progress | None,
) -> dict[str, int]:
    copied: dict[str, int] = {}
    pending = 0
    target.begin(writer, write=True)
    try:
        for table in TABLES:
            if progress is not None:
                progress.stage(table, reader.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])
            cursor = reader.stream(f"SELECT * FROM {table}")
            columns = [str(d[0]) for d in cursor.description]
            insert = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
            copied[table] = 0
            while batch := cursor.fetchmany(BATCH_ROWS):
                writer.executemany(insert, batch)
                copied[table] += len(batch)
                pending += len(batch)
                if progress is not None:
                    progress.advance(len(batch))
                if pending >= COMMIT_ROWS:
                    target.commit(writer)
                    target.begin(writer, write=True)
                    pending = 0
        target.commit(writer)
    except BaseException as exc:
        with suppress(*target.errors):
            target.rollback(writer)
        emptied = _empty(writer, target, copied)
        if isinstance(exc, failures):
            raise CopyFailed(exc, emptied) from exc
        raise
    return copied


def _empty(writer: Conn, target: Backend, copied: dict[str, int]) -> bool:
    """Delete what a failed copy committed, children first, leaving the target as it was: empty."""
    try:
        for table in reversed(list(copied)):
            target.begin(writer, write=True)
            writer.execute(f"DELETE FROM {table}")
            target.commit(writer)
    except target.errors:
        return False
    return True
