"""Export one Scope as the lines of a `powercontext.scope-export` file (format in `scope_transfer`).

`export_lines` reads one snapshot (one read transaction) a page of rows at a time and yields the
lines as it reads them, so memory stays flat whatever the Scope's size; it checks everything it
can refuse (a database without PowerContext's tables or newer than this release, no such Scope)
before its first line. `export_scope` writes them to a file (`powercontext export`), `export_chunks`
groups them into chunks for a streamed HTTP answer.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Iterator
from typing import Any

from .backends import Backend
from .clock import now
from .conn import Conn
from .export_lines import TransferRefused
from .progress import Progress
from .transfer_format import (
    FORMAT,
    KINDS,
    LATER_COLUMNS,
    OPTIONAL_TABLES,
    SCOPE_FIELDS,
    VERSION,
    TransferReport,
    known_version,
    line,
    schema_version,
    transaction,
)

# Rows per read: a page of one table, read in one statement.
BATCH_ROWS = 1000
# Bytes of lines per chunk of a streamed answer: few thread hops per Scope, little held at once.
CHUNK_BYTES = 256 << 10

Lines = Generator[bytes, None, dict[str, int]]


def export_scope(
    backend: Backend, scope_id: str, write: Callable[[bytes], object], progress: Progress | None = None
) -> TransferReport:
    """Write the Scope `scope_id` of `backend` as export lines through `write`, from one snapshot.

    The database is read as it is, never migrated or created: `TransferRefused` for a database
    without PowerContext's tables, one newer than this release, or no such Scope."""
    started = time.perf_counter()
    lines = export_lines(backend, scope_id, progress)
    while True:
        try:
            write(next(lines))
        except StopIteration as end:
            return TransferReport(scope_id, end.value, 0, time.perf_counter() - started)


def export_chunks(backend: Backend, scope_id: str) -> Iterator[bytes]:
    """The export's lines in chunks of about `CHUNK_BYTES`. The first chunk is read before this
    returns, so a refusal is raised here rather than in the middle of an answer; closing the
    iterator ends the read transaction."""
    chunks = _chunked(export_lines(backend, scope_id, None))
    first = next(chunks)
    return _after(first, chunks)


def _after(first: bytes, rest: Iterator[bytes]) -> Iterator[bytes]:
    yield first
    yield from rest


def _chunked(lines: Iterator[bytes]) -> Iterator[bytes]:
    pending: list[bytes] = []
    size = 0
    for text in lines:
        pending.append(text)
        size += len(text)
        if size >= CHUNK_BYTES:
            yield b"".join(pending)
            pending, size = [], 0
    if pending:
        yield b"".join(pending)


def export_lines(backend: Backend, scope_id: str, progress: Progress | None) -> Lines:
    """The export's lines, from one read transaction held until the last line (or until the
    generator is closed); its return value counts the lines of each type."""
    with transaction(backend, write=False) as conn:
        return (yield from _export(conn, backend, scope_id, progress))


def _export(conn: Conn, backend: Backend, scope_id: str, progress: Progress | None) -> Lines:
    tables = {str(row[0]) for row in conn.execute(backend.list_tables).fetchall()}
    required = ("schema_migrations", "scopes", "scope_references", *(k.table for k in KINDS))
    missing = [t for t in required if t not in tables and t not in OPTIONAL_TABLES]
    if missing:
        raise TransferRefused(
            f"The database is not a PowerContext store (it lacks the tables {', '.join(missing)})."
        )
    version, known = schema_version(conn), known_version(backend)
    if version > known:
        raise TransferRefused(
            f"The database is at schema version {version}, newer than this release's {known}: "
            "export it with the release that serves it."
        )
    row = conn.execute(
        "SELECT scope_key, " + ", ".join(f for f, _ in SCOPE_FIELDS) + " FROM scopes WHERE scope_id = ?",
        (scope_id,),
    ).fetchone()
    if row is None:
        raise TransferRefused(f"There is no Scope {scope_id!r} in this database.")
    key = int(row[0])
    scope: dict[str, Any] = {"type": "scope"}
    scope.update(zip((f for f, _ in SCOPE_FIELDS), row[1:], strict=True))
    scope["context_references"] = [
        str(r[0])
        for r in conn.execute(
            "SELECT s.scope_id FROM scope_references r JOIN scopes s ON s.scope_key = r.referenced_key"
            " WHERE r.scope_key = ? ORDER BY r.position",
            (key,),
        ).fetchall()
    ]
    kinds = [kind for kind in KINDS if kind.table in tables]
    counts = {
        kind.name: int(
            conn.execute(f"SELECT COUNT(*) FROM {kind.table} WHERE scope_key = ?", (key,)).fetchone()[0]
        )
        for kind in kinds
    }
    header = {
        "format": FORMAT,
        "version": VERSION,
        "exported_at": now(),
        "schema_version": version,
        "scope_id": scope_id,
        "rows": {kind.name: counts.get(kind.name, 0) for kind in KINDS},
    }
    if progress is not None:
        progress.stage("export", 1 + sum(counts.values()))
    yield line(header)
    yield line(scope)
    if progress is not None:
        progress.advance(1)
    written = {"scope": 1}
    for kind in kinds:
        names = [column for column, _ in kind.fields]
        selected = ", ".join(
            "NULL" if LATER_COLUMNS.get((kind.table, column), 0) > version else column for column in names
        )
        left_out_if_null = [column for column, json_type in kind.fields if json_type.endswith("-")]
        written[kind.name] = 0
        # Page by page on a unique column rather than one streamed query: OceanBase ends any
        # statement after `ob_query_timeout` (10 s), even one whose rows are still being read.
        after = kind.start
        while True:
            batch = conn.execute(
                f"SELECT {kind.order}, {selected} FROM {kind.table}"
                f" WHERE scope_key = ? AND {kind.order} > ? ORDER BY {kind.order} LIMIT ?",
                (key, after, BATCH_ROWS),
            ).fetchall()
            for values in batch:
                record: dict[str, Any] = {"type": kind.name}
                record.update(zip(names, values[1:], strict=True))
                for column in left_out_if_null:
                    if record[column] is None:
                        del record[column]
                yield line(record)
            written[kind.name] += len(batch)
            if progress is not None and batch:
                progress.advance(len(batch))
            if len(batch) < BATCH_ROWS:
                break
            after = batch[-1][0]
    return written
