"""Export one Scope with everything it holds to a JSON Lines file, and import such a file into any
store (SQLite or OceanBase): how a Scope moves between deployments without the rest of its database.

The file (`powercontext.scope-export`, version 1) is UTF-8 JSON Lines, one object per line:

* line 1, the header: `{"format": "powercontext.scope-export", "version": 1, "exported_at": ...,
  "schema_version": N, "scope_id": ..., "rows": {"counter": n, ...}}`; `rows` counts the lines of
  each type that follow, so a truncated file is refused rather than half imported;
* line 2, `{"type": "scope", ...}`: the Scope's own columns, with its context references as the
  ids of the Scopes it reads (`context_references`, in order);
* then the rows it owns, each `{"type": T, column: value, ...}`, type after type in this order:
  `counter`, `memory_revision`, `memory_entry`, `memory_entry_version`, `memory_erasure`,
  `artifact_revision`, `artifact_head`, `candidate` (see `_KINDS`).

Lines carry a row's public identity (`entry-3`, `entry-3-v2`, `experience-1`, `candidate-2`,
revision and version numbers) and never the database's internal keys (`scope_key`, `version_key`,
`revision_key`), which the import draws afresh. Memory versions and artifact revisions are written
and read back in key order, so their new keys keep the old ones' order, which search ties follow.
The search index is not exported: the import indexes the heads again through `sql_search`, so
the generations of running servers' in-memory mirrors advance with it.

The export reads one snapshot (one read transaction) a page of rows at a time and writes them
line by line; the import reads line by line, inserts in batches and runs in one write transaction,
so a failed or refused import leaves the target exactly as it was. Memory stays flat either way,
whatever the Scope's size.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

from ..errors import PowerContextError, RetrievalUnavailable
from ..models import EXPERIENCE_FAMILY, PROFILE_FAMILY, TOPIC_FAMILY, ArtifactRef
from . import sql_search
from .artifacts import SEARCHED_FAMILIES, decode_artifact, decode_proposal, search_text
from .backends import Backend
from .clock import now
from .conn import Conn
from .progress import Progress
from .sql_store import SqlStore

logger = logging.getLogger("powercontext.store")

FORMAT = "powercontext.scope-export"
VERSION = 1
# Rows per read of the export and per multi-row INSERT of the import (or fewer when their text is
# long: a batch is flushed once it holds `BATCH_BYTES` of lines); documents per indexing step,
# whose terms and postings take several times the text's size while they are written.
BATCH_ROWS = 1000
BATCH_BYTES = 4 << 20
INDEX_BATCH = 250

_ARTIFACT_FAMILIES = frozenset({EXPERIENCE_FAMILY, PROFILE_FAMILY, TOPIC_FAMILY})
_CANDIDATE_STATES = frozenset({"pending", "approved", "rejected"})
_MEMORY_OPERATIONS = frozenset({"remember", "revise", "retire", "erase"})


class TransferRefused(PowerContextError):
    """The export or import cannot be done as asked (unknown Scope, not an export, unknown format
    version, Scope id taken, referenced Scopes missing, inconsistent file); nothing was written."""


class TransferFailed(PowerContextError):
    """A database error stopped the export or import; an import's target is as it was."""

    def __init__(self, cause: Exception) -> None:
        super().__init__(f"{type(cause).__name__}: {cause}")


@dataclass(frozen=True, slots=True)
class TransferReport:
    scope_id: str
    rows: dict[str, int]  # line type → lines written or read, `scope` included
    indexed: int  # head documents indexed (imports)
    seconds: float


# Line types ---------------------------------------------------------------------------------------

# A column's JSON type: "s" string, "i" integer, "?" when it may be null.
_SCOPE_FIELDS = (
    ("scope_id", "s"),
    ("title", "s"),
    ("summary", "s"),
    ("version", "i"),
    ("memory_revision", "i"),
    ("entry_counter", "i"),
    ("created_at", "s"),
    ("updated_at", "s"),
)


@dataclass(frozen=True, slots=True)
class _Kind:
    name: str  # the line's "type"
    table: str
    fields: tuple[tuple[str, str], ...]  # (column, JSON type), in the line's order
    order: str  # a column unique within the Scope, in the rows' write order: the export's pages
    start: object = 0  # a value below every value of `order`

    @property
    def columns(self) -> str:
        return ", ".join(column for column, _ in self.fields)


# In file order, which is also an order the foreign keys allow (every table references `scopes`;
# artifact heads reference revisions).
_KINDS = (
    _Kind("counter", "scope_counters", (("name", "s"), ("value", "i")), "name", ""),
    _Kind(
        "memory_revision",
        "memory_revisions",
        (("revision", "i"), ("operation", "s"), ("entry_id", "s"), ("created_at", "s")),
        "revision",
    ),
    _Kind(
        "memory_entry",
        "memory_entries",
        (
            ("entry_id", "s"),
            ("entry_number", "i"),
            ("kind", "s"),
            ("head_version", "i"),
            ("retired_revision", "i?"),
        ),
        "entry_number",
    ),
    _Kind(
        "memory_entry_version",
        "memory_entry_versions",
        (
            ("entry_id", "s"),
            ("version_number", "i"),
            ("entry_version_id", "s"),
            ("text", "s"),
            ("added_revision", "i"),
            ("removed_revision", "i?"),
        ),
        "version_key",
    ),
    _Kind("memory_erasure", "memory_erasures", (("entry_id", "s"), ("erased_revision", "i")), "entry_id", ""),
    _Kind(
        "artifact_revision",
        "artifact_revisions",
        (("family", "s"), ("artifact_id", "s"), ("revision", "i"), ("payload", "s"), ("created_at", "s")),
        "revision_key",
    ),
    _Kind(
        "artifact_head",
        "artifact_heads",
        (("family", "s"), ("artifact_id", "s"), ("revision", "i")),
        "revision_key",
    ),
    _Kind(
        "candidate",
        "candidates",
        (
            ("candidate_id", "s"),
            ("candidate_number", "i"),
            ("family", "s"),
            ("target_artifact_id", "s?"),
            ("base_revision", "i"),
            ("payload", "s"),
            ("state", "s"),
            ("version", "i"),
            ("committed_artifact_id", "s?"),
            ("committed_revision", "i?"),
            ("created_at", "s"),
            ("decided_at", "s?"),
        ),
        "candidate_number",
    ),
)
_BY_NAME = {kind.name: kind for kind in _KINDS}
_RANK = {kind.name: rank for rank, kind in enumerate(_KINDS)}
# Tables a database may lack and still be exported: they came with later migrations.
_OPTIONAL_TABLES = frozenset({"memory_erasures"})


def _schema_version(conn: Conn) -> int:
    return int(conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0] or 0)


def _known_version(backend: Backend) -> int:
    return max(migration.version for migration in backend.migrations)


def _line(record: dict[str, Any]) -> bytes:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


# Export -------------------------------------------------------------------------------------------


def export_scope(
    backend: Backend, scope_id: str, write: Callable[[bytes], object], progress: Progress | None = None
) -> TransferReport:
    """Write the Scope `scope_id` of `backend` as export lines through `write`, from one snapshot.

    The database is read as it is, never migrated or created: `TransferRefused` for a database
    without PowerContext's tables, one newer than this release, or no such Scope."""
    started = time.perf_counter()
    try:
        conn = backend.connect()
    except backend.errors as exc:
        raise TransferFailed(exc) from exc
    try:
        backend.begin(conn, write=False)
        try:
            rows = _export(conn, backend, scope_id, write, progress)
        finally:
            with suppress(*backend.errors):
                backend.rollback(conn)
    except backend.errors as exc:
        raise TransferFailed(exc) from exc
    finally:
        with suppress(*backend.errors):
            backend.close(conn)
    return TransferReport(scope_id, rows, 0, time.perf_counter() - started)


def _export(
    conn: Conn, backend: Backend, scope_id: str, write: Callable[[bytes], object], progress: Progress | None
) -> dict[str, int]:
    tables = {str(row[0]) for row in conn.execute(backend.list_tables).fetchall()}
    required = ("schema_migrations", "scopes", "scope_references", *(k.table for k in _KINDS))
    missing = [t for t in required if t not in tables and t not in _OPTIONAL_TABLES]
    if missing:
        raise TransferRefused(
            f"The database is not a PowerContext store (it lacks the tables {', '.join(missing)})."
        )
    schema_version, known = _schema_version(conn), _known_version(backend)
    if schema_version > known:
        raise TransferRefused(
            f"The database is at schema version {schema_version}, newer than this release's {known}: "
            "export it with the release that serves it."
        )
    row = conn.execute(
        "SELECT scope_key, " + ", ".join(f for f, _ in _SCOPE_FIELDS) + " FROM scopes WHERE scope_id = ?",
        (scope_id,),
    ).fetchone()
    if row is None:
        raise TransferRefused(f"There is no Scope {scope_id!r} in this database.")
    key = int(row[0])
    scope: dict[str, Any] = {"type": "scope"}
    scope.update(zip((f for f, _ in _SCOPE_FIELDS), row[1:], strict=True))
    scope["context_references"] = [
        str(r[0])
        for r in conn.execute(
            "SELECT s.scope_id FROM scope_references r JOIN scopes s ON s.scope_key = r.referenced_key"
            " WHERE r.scope_key = ? ORDER BY r.position",
            (key,),
        ).fetchall()
    ]
    kinds = [kind for kind in _KINDS if kind.table in tables]
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
        "schema_version": schema_version,
        "scope_id": scope_id,
        "rows": {kind.name: counts.get(kind.name, 0) for kind in _KINDS},
    }
    if progress is not None:
        progress.stage("export", 1 + sum(counts.values()))
    write(_line(header))
    write(_line(scope))
    if progress is not None:
        progress.advance(1)
    written = {"scope": 1}
    for kind in kinds:
        names = [column for column, _ in kind.fields]
        written[kind.name] = 0
        # Page by page on a unique column rather than one streamed query: OceanBase ends any
        # statement after `ob_query_timeout` (10 s), even one whose rows are still being read.
        after = kind.start
        while True:
            batch = conn.execute(
                f"SELECT {kind.order}, {kind.columns} FROM {kind.table}"
                f" WHERE scope_key = ? AND {kind.order} > ? ORDER BY {kind.order} LIMIT ?",
                (key, after, BATCH_ROWS),
            ).fetchall()
            for values in batch:
                record: dict[str, Any] = {"type": kind.name}
                record.update(zip(names, values[1:], strict=True))
                write(_line(record))
            written[kind.name] += len(batch)
            if progress is not None and batch:
                progress.advance(len(batch))
            if len(batch) < BATCH_ROWS:
                break
            after = batch[-1][0]
    return written


# Import -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Header:
    scope_id: str
    schema_version: int
    rows: dict[str, int]


def _records(lines: Iterable[bytes]) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """(line number, size, object) of each line; `TransferRefused` for a line that is no object."""
    for number, raw in enumerate(lines, start=1):
        try:
            record = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            record = None
        if not isinstance(record, dict):
            if number == 1:
                raise TransferRefused(
                    "The file is not a PowerContext Scope export (its first line is no header)."
                )
            raise TransferRefused(f"Line {number} is not a JSON object; the file is damaged.")
        yield number, len(raw), record


def _header(first: dict[str, Any] | None) -> _Header:
    if first is None:
        raise TransferRefused("The file is empty, not a PowerContext Scope export.")
    if first.get("format") != FORMAT:
        raise TransferRefused(
            f'The file is not a PowerContext Scope export (no "format": "{FORMAT}" header).'
        )
    version = first.get("version")
    if version != VERSION or isinstance(version, bool):
        raise TransferRefused(
            f"The export has format version {json.dumps(version)}; this release reads version {VERSION} only."
        )
    scope_id, schema_version, rows = first.get("scope_id"), first.get("schema_version"), first.get("rows")
    if (
        not isinstance(scope_id, str)
        or not isinstance(schema_version, int)
        or not _is_int(schema_version)
        or not isinstance(rows, dict)
        or not all(name in _BY_NAME and _is_int(n) and n >= 0 for name, n in rows.items())
    ):
        raise TransferRefused("The export's header is damaged (scope_id, schema_version or rows).")
    return _Header(scope_id, schema_version, {name: int(n) for name, n in rows.items()})


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def import_scope(
    backend: Backend, lines: Iterable[bytes], progress: Progress | None = None
) -> TransferReport:
    """Recreate the exported Scope in `backend` (its schema created or upgraded first) in one
    transaction, and index its heads. `TransferRefused` when the file is not a readable export,
    the Scope id is taken or a Scope it references is missing; the target is then unchanged, as
    after a `TransferFailed`."""
    started = time.perf_counter()
    records = _records(lines)
    first = next(records, None)
    # A file that is no export is refused before the target is touched.
    header = _header(None if first is None else first[2])
    try:
        SqlStore(backend).close()  # creates the schema, or applies any pending migration, then lets go
    except RetrievalUnavailable as exc:
        raise TransferFailed(exc.__cause__ if isinstance(exc.__cause__, Exception) else exc) from exc
    try:
        conn = backend.connect()
    except backend.errors as exc:
        raise TransferFailed(exc) from exc
    try:
        backend.begin(conn, write=True)
        try:
            rows, indexed = _Importer(conn, backend, header, progress).run(records)
            backend.commit(conn)
        except BaseException as exc:
            with suppress(*backend.errors):
                backend.rollback(conn)
            if isinstance(exc, backend.duplicate_key) and not isinstance(exc, PowerContextError):
                raise TransferRefused(
                    f"The database refused the file's rows ({exc}): the file holds conflicting rows, "
                    "or the Scope was created meanwhile. Nothing was imported."
                ) from exc
            raise
    except backend.errors as exc:
        raise TransferFailed(exc) from exc
    finally:
        with suppress(*backend.errors):
            backend.close(conn)
    _merge_index(backend)
    return TransferReport(header.scope_id, rows, indexed, time.perf_counter() - started)


def _merge_index(backend: Backend) -> None:
    """Merge the imported pages' deferred index writes now, in bounded chunks, rather than leave
    them to the next server (reads are exact either way). The import itself is committed: a
    failure here leaves the merges to the server."""
    store = SqlStore(backend)
    try:
        store.merge_index()
    except RetrievalUnavailable:
        logger.warning("the imported Scope's index merges are left to the server")
    finally:
        store.close()


class _Importer:
    def __init__(self, conn: Conn, backend: Backend, header: _Header, progress: Progress | None) -> None:
        self.conn = conn
        self.backend = backend
        self.header = header
        self.progress = progress
        self.key = 0
        self.counts = {"scope": 0, **{kind.name: 0 for kind in _KINDS}}
        self.to_index = 0

    def run(self, records: Iterable[tuple[int, int, dict[str, Any]]]) -> tuple[dict[str, int], int]:
        known = _known_version(self.backend)
        if _schema_version(self.conn) > known:
            raise TransferRefused(
                f"The target database is at a schema version newer than this release's {known}: "
                "import with the release that serves it."
            )
        if self.progress is not None:
            self.progress.stage("import", 1 + sum(self.header.rows.values()))
        current: _Kind | None = None
        pending: list[tuple[object, ...]] = []
        size = 0
        for number, length, record in records:
            name = record.get("type")
            if name == "scope":
                if self.counts["scope"]:
                    raise TransferRefused(f"Line {number} is a second Scope; an export holds one.")
                self._scope(number, record)
                continue
            kind = _BY_NAME.get(name) if isinstance(name, str) else None
            if kind is None:
                raise TransferRefused(f"Line {number} has an unknown type {json.dumps(name)}.")
            if not self.counts["scope"]:
                raise TransferRefused(f"Line {number} comes before the Scope's line.")
            if kind is not current:
                if current is not None and _RANK[kind.name] < _RANK[current.name]:
                    raise TransferRefused(
                        f"Line {number} is a {kind.name} after {current.name} lines; the lines are out of order."
                    )
                self._flush(current, pending)
                current, pending, size = kind, [], 0
            pending.append(self._values(kind, number, record))
            self.counts[kind.name] += 1
            size += length
            if len(pending) >= BATCH_ROWS or size >= BATCH_BYTES:
                self._flush(current, pending)
                pending, size = [], 0
        self._flush(current, pending)
        self._check_complete()
        indexed = self._index()
        return dict(self.counts), indexed

    # Rows -------------------------------------------------------------------------------------
    def _scope(self, number: int, record: dict[str, Any]) -> None:
        fields = (*_SCOPE_FIELDS, ("context_references", "l"))
        values = _checked(number, "scope", fields, record)
        scope_id = str(values[0])
        if scope_id != self.header.scope_id:
            raise TransferRefused(f"Line {number} holds the Scope {scope_id!r}, the header names another.")
        if self.conn.execute("SELECT 1 FROM scopes WHERE scope_id = ?", (scope_id,)).fetchone():
            raise TransferRefused(
                f"The target already has a Scope {scope_id!r}; delete it first or import into another database."
            )
        references: list[str] = record["context_references"]
        if scope_id in references or len(set(references)) != len(references):
            raise TransferRefused(
                f"Line {number}: the context references repeat a Scope or name the Scope itself."
            )
        found = {
            str(row[0]): int(row[1])
            for ref in references
            for row in self.conn.execute("SELECT scope_id, scope_key FROM scopes WHERE scope_id = ?", (ref,))
        }
        missing = [ref for ref in references if ref not in found]
        if missing:
            raise TransferRefused(
                f"The Scope {scope_id!r} references Scopes the target lacks: {', '.join(missing)}. "
                "Import them first (export each with `powercontext export`)."
            )
        cursor = self.conn.execute(
            "INSERT INTO scopes ("
            + ", ".join(f for f, _ in _SCOPE_FIELDS)
            + ") VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            values[:-1],
        )
        self.key = int(cursor.lastrowid or 0)
        self.conn.executemany(
            "INSERT INTO scope_references (scope_key, position, referenced_key) VALUES (?, ?, ?)",
            [(self.key, position, found[ref]) for position, ref in enumerate(references)],
        )
        self.counts["scope"] = 1
        if self.progress is not None:
            self.progress.advance(1)

    def _values(self, kind: _Kind, number: int, record: dict[str, Any]) -> tuple[object, ...]:
        values = _checked(number, kind.name, kind.fields, record)
        if kind.name in ("artifact_revision", "artifact_head", "candidate"):
            family = record["family"]
            if family not in _ARTIFACT_FAMILIES:
                raise TransferRefused(f"Line {number}: unknown family {family!r}.")
        try:
            if kind.name == "artifact_revision":
                ref = ArtifactRef(record["family"], record["artifact_id"], record["revision"])
                decode_artifact(record["family"], ref, record["payload"])
            elif kind.name == "candidate":
                decode_proposal(record["family"], record["payload"])
        except (ValueError, TypeError, KeyError) as exc:
            raise TransferRefused(f"Line {number}: the payload does not decode ({exc}).") from None
        if kind.name == "candidate" and record["state"] not in _CANDIDATE_STATES:
            raise TransferRefused(f"Line {number}: unknown Candidate state {record['state']!r}.")
        if kind.name == "memory_revision" and record["operation"] not in _MEMORY_OPERATIONS:
            raise TransferRefused(f"Line {number}: unknown Memory operation {record['operation']!r}.")
        if kind.name == "memory_entry_version" and record["removed_revision"] is None:
            self.to_index += 1
        if kind.name == "artifact_head" and record["family"] in SEARCHED_FAMILIES:
            self.to_index += 1
        return (self.key, *values)

    def _flush(self, kind: _Kind | None, rows: Sequence[tuple[object, ...]]) -> None:
        if kind is None or not rows:
            return
        if kind.name == "artifact_head":
            # The head points at its revision by key, which only the target knows.
            self.conn.executemany(
                "INSERT INTO artifact_heads (scope_key, family, artifact_id, revision, revision_key)"
                " SELECT scope_key, family, artifact_id, revision, revision_key FROM artifact_revisions"
                " WHERE scope_key = ? AND family = ? AND artifact_id = ? AND revision = ?",
                rows,
            )
        else:
            marks = ", ".join("?" * (len(kind.fields) + 1))
            self.conn.executemany(
                f"INSERT INTO {kind.table} (scope_key, {kind.columns}) VALUES ({marks})", rows
            )
        if self.progress is not None:
            self.progress.advance(len(rows))

    def _check_complete(self) -> None:
        if not self.counts["scope"]:
            raise TransferRefused("The file holds no Scope line; it is incomplete.")
        short = [
            f"{name} {self.counts[name]} of {announced}"
            for name, announced in self.header.rows.items()
            if self.counts[name] != announced
        ]
        short += [
            f"{name} {n} of 0"
            for name, n in self.counts.items()
            if name != "scope" and n and name not in self.header.rows
        ]
        if short:
            raise TransferRefused(
                f"The file does not hold the lines its header announces ({'; '.join(short)}); "
                "it is incomplete or damaged. Nothing was imported."
            )
        heads = self.conn.execute(
            "SELECT COUNT(*) FROM artifact_heads WHERE scope_key = ?", (self.key,)
        ).fetchone()[0]
        headless = self.conn.execute(
            "SELECT COUNT(*) FROM memory_entries e LEFT JOIN memory_entry_versions v"
            " ON v.scope_key = e.scope_key AND v.entry_id = e.entry_id AND v.version_number = e.head_version"
            " WHERE e.scope_key = ? AND v.entry_id IS NULL",
            (self.key,),
        ).fetchone()[0]
        if int(heads) != self.counts["artifact_head"] or int(headless):
            raise TransferRefused(
                "The file is inconsistent: a head names a revision or version it does not hold. "
                "Nothing was imported."
            )

    # Search index -----------------------------------------------------------------------------
    def _index(self) -> int:
        """Index every head, family by family in key order, as writing them one by one would."""
        if self.progress is not None:
            self.progress.stage("index", self.to_index)
        indexed = self._index_pages(
            "memory",
            "SELECT version_key, text FROM memory_entry_versions"
            " WHERE scope_key = ? AND removed_revision IS NULL AND version_key > ? ORDER BY version_key LIMIT ?",
            (),
            lambda row: (int(row[0]), str(row[1])),
        )
        for family in sorted(SEARCHED_FAMILIES):

            def document(row: Sequence[Any], family: str = family) -> tuple[int, str]:
                ref = ArtifactRef(family, str(row[1]), int(row[2]))
                return int(row[0]), search_text(decode_artifact(family, ref, str(row[3])))

            indexed += self._index_pages(
                family,
                "SELECT r.revision_key, r.artifact_id, r.revision, r.payload FROM artifact_heads h"
                " JOIN artifact_revisions r ON r.revision_key = h.revision_key"
                " WHERE h.scope_key = ? AND h.family = ? AND h.revision_key > ? ORDER BY h.revision_key LIMIT ?",
                (family,),
                document,
            )
        return indexed

    def _index_pages(
        self,
        family: str,
        sql: str,
        params: tuple[object, ...],
        document: Callable[[Sequence[Any]], tuple[int, str]],
    ) -> int:
        after, indexed = 0, 0
        while True:
            rows = self.conn.execute(sql, (self.key, *params, after, INDEX_BATCH)).fetchall()
            if not rows:
                return indexed
            docs = [document(row) for row in rows]
            sql_search.index_documents(self.conn, self.key, family, docs)
            after = docs[-1][0]
            indexed += len(docs)
            if self.progress is not None:
                self.progress.advance(len(docs))


def _checked(
    number: int, name: str, fields: Sequence[tuple[str, str]], record: dict[str, Any]
) -> tuple[object, ...]:
    """The record's values in `fields` order, each of its declared JSON type, and no other key."""
    expected = {"type", *(field for field, _ in fields)}
    if set(record) != expected:
        odd = sorted(set(record) ^ expected)
        raise TransferRefused(f"Line {number} ({name}) lacks or adds the fields {', '.join(odd)}.")
    values: list[object] = []
    for field, spec in fields:
        value = record[field]
        if value is None and spec.endswith("?"):
            values.append(value)
            continue
        kind = spec.rstrip("?")
        fits = (
            (kind == "s" and isinstance(value, str))
            or (kind == "i" and _is_int(value))
            or (kind == "l" and isinstance(value, list) and all(isinstance(v, str) for v in value))
        )
        if not fits:
            raise TransferRefused(f"Line {number} ({name}): {field} has the wrong type.")
        values.append(value)
    return tuple(values)
