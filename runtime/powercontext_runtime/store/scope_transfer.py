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
  `artifact_revision`, `artifact_head`, `candidate` (see `KINDS`).

Lines carry a row's public identity (`entry-3`, `entry-3-v2`, `experience-1`, `candidate-2`,
revision and version numbers) and never the database's internal keys (`scope_key`, `version_key`,
`revision_key`), which the import draws afresh. Memory versions and artifact revisions are written
and read back in key order, so their new keys keep the old ones' order, which search ties follow.
The search index is not exported: the import indexes the heads again through search, so
the generations of running servers' in-memory mirrors advance with it.

The export (`scope_export`) reads one snapshot (one read transaction) a page of rows at a time and
yields it line by line; the import (here) reads line by line, holds every line to the contract's
schema for it (`export_lines`), inserts in batches and runs in one write transaction, so a failed
or refused import leaves the target exactly as it was. Memory stays flat either way, whatever the
Scope's size; time is linear in the file's.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from pydantic import MISSING

from powercontext_api.models import ScopeExportHeader, ScopeExportScope

from .. import search
from ..errors import RetrievalUnavailable, ScopeAlreadyExists
from ..models import ArtifactRef
from . import export_lines, memory_hygiene, migrations
from .artifacts import SEARCHED_FAMILIES, decode_artifact, search_text
from .backends import Backend
from .clock import instant, now
from .conn import Conn, inserted_key
from .export_lines import RowLimits, TransferRefused
from .progress import Progress
from .transfer_format import (
    BY_NAME,
    FORMAT,
    KINDS,
    RANK,
    SCOPE_FIELDS,
    VERSION,
    Kind,
    TransferFailed,
    TransferReport,
    known_version,
    schema_version,
    transaction,
)

logger = logging.getLogger("powercontext.store")

__all__ = [
    "ScopeIdTaken",
    "TransferFailed",
    "TransferRefused",
    "TransferReport",
    "import_lines",
    "import_scope",
]

# Rows per multi-row INSERT (or fewer when their text is long: a batch is flushed once it holds
# `BATCH_BYTES` of lines); documents per indexing step, whose terms and postings take several times
# the text's size while they are written.
BATCH_ROWS = 1000
BATCH_BYTES = 4 << 20
INDEX_BATCH = 250


class ScopeIdTaken(TransferRefused, ScopeAlreadyExists):
    """The import's Scope id is in use in the target."""


# Import -------------------------------------------------------------------------------------------

# Called with the Scope ids the imported Scope references, before anything is written: the caller's
# access check (a Scope that references another exposes that one's data through prepare).
ReferenceCheck = Callable[[Sequence[str]], None]


def _numbered(lines: Iterable[bytes]) -> Iterator[tuple[int, bytes]]:
    return enumerate(lines, start=1)


def _header(first: tuple[int, bytes] | None) -> ScopeExportHeader:
    if first is None:
        raise TransferRefused("The file is empty, not a PowerContext Scope export.", 1)
    try:
        record = json.loads(first[1]) if len(first[1]) <= export_lines.MAX_LINE_BYTES else None
    except (ValueError, UnicodeDecodeError):
        record = None
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        raise TransferRefused(
            f'The file is not a PowerContext Scope export (its first line is no "format": "{FORMAT}" header).',
            1,
        )
    version = record.get("version")
    if version != VERSION or isinstance(version, bool):
        raise TransferRefused(
            f"The export has format version {json.dumps(version)}; this release reads version {VERSION} only.",
            1,
        )
    return export_lines.header(1, first[1])


def import_scope(
    backend: Backend, lines: Iterable[bytes], progress: Progress | None = None, scope_id: str | None = None
) -> TransferReport:
    """Recreate the exported Scope in `backend` (its schema created or upgraded first) in one
    transaction, under its own id or `scope_id`, and index its heads. `TransferRefused` when the
    file is not a valid export, the Scope id is taken or a Scope it references is missing; the
    target is then unchanged, as after a `TransferFailed`."""
    records = _numbered(lines)
    # A file that is no export is refused before the target is touched.
    header = _header(next(records, None))
    _migrate(backend)
    report = _import(backend, header, records, scope_id, progress, None)
    _merge_index(backend)
    return report


def _migrate(backend: Backend) -> None:
    """Create the schema, or apply any pending migration, as a server opening the database would."""
    with transaction(backend, write=True) as conn:
        migrations.apply(conn, backend.migrations, now())


def import_lines(
    backend: Backend, lines: Iterable[bytes], scope_id: str, check_references: ReferenceCheck
) -> TransferReport:
    """Recreate the exported Scope under the id `scope_id` (the exported one or another) in a
    store whose schema is current (a running server's), as `import_scope` does."""
    records = _numbered(lines)
    header = _header(next(records, None))
    return _import(backend, header, records, scope_id, None, check_references)


def _import(
    backend: Backend,
    header: ScopeExportHeader,
    records: Iterator[tuple[int, bytes]],
    scope_id: str | None,
    progress: Progress | None,
    check_references: ReferenceCheck | None,
) -> TransferReport:
    started = time.perf_counter()
    target = scope_id or header.scope_id
    with transaction(backend, write=True) as conn:
        rows, indexed = _Importer(conn, backend, header, target, progress, check_references).run(records)
    return TransferReport(target, rows, indexed, time.perf_counter() - started)


def _merge_index(backend: Backend) -> None:
    """Merge the imported pages' deferred index writes now, in bounded chunks, rather than leave
    them to the next server (reads are exact either way). The import itself is committed: a
    failure here leaves the merges to the server."""
    from .sql_store import SqlStore  # the store imports this module for its own import operation

    store = SqlStore(backend)
    try:
        store.merge_index()
    except RetrievalUnavailable:
        logger.warning("the imported Scope's index merges are left to the server")
    finally:
        store.close()


class _Importer:
    def __init__(
        self,
        conn: Conn,
        backend: Backend,
        header: ScopeExportHeader,
        scope_id: str,
        progress: Progress | None,
        check_references: ReferenceCheck | None,
    ) -> None:
        self.conn = conn
        self.backend = backend
        self.announced = header.rows.model_dump(exclude_unset=True)
        self.exported_id = header.scope_id
        self.scope_id = scope_id
        self.progress = progress
        self.check_references = check_references
        self.key = 0
        self.counts = {"scope": 0, **{kind.name: 0 for kind in KINDS}}
        self.to_index = 0
        self.limits = RowLimits()

    def run(self, records: Iterable[tuple[int, bytes]]) -> tuple[dict[str, int], int]:
        known = known_version(self.backend)
        if schema_version(self.conn) > known:
            raise TransferRefused(
                f"The target database is at a schema version newer than this release's {known}: "
                "import with the release that serves it."
            )
        if self.progress is not None:
            self.progress.stage("import", 1 + sum(self.announced.values()))
        current: Kind | None = None
        pending: list[tuple[object, ...]] = []
        size = 0
        for number, raw in records:
            record: Any = export_lines.row(number, raw)
            if isinstance(record, ScopeExportScope):
                if self.counts["scope"]:
                    raise TransferRefused(f"Line {number} is a second Scope; an export holds one.", number)
                self._scope(number, record)
                continue
            kind = BY_NAME[record.type]
            if not self.counts["scope"]:
                raise TransferRefused(f"Line {number} comes before the Scope's line.", number)
            if kind is not current:
                if current is not None and RANK[kind.name] < RANK[current.name]:
                    raise TransferRefused(
                        f"Line {number} is a {kind.name} after {current.name} lines; the lines are out of order.",
                        number,
                    )
                self._flush(current, pending)
                current, pending, size = kind, [], 0
            pending.append(self._values(kind, number, record))
            self.counts[kind.name] += 1
            size += len(raw)
            if len(pending) >= BATCH_ROWS or size >= BATCH_BYTES:
                self._flush(current, pending)
                pending, size = [], 0
        self._flush(current, pending)
        self._check_complete()
        memory_hygiene.fill_text_hashes(self.conn, self.key)
        indexed = self._index()
        return dict(self.counts), indexed

    # Rows -------------------------------------------------------------------------------------
    def _scope(self, number: int, record: ScopeExportScope) -> None:
        if record.scope_id != self.exported_id:
            raise TransferRefused(
                f"Line {number} holds the Scope {record.scope_id!r}, the header names another.", number
            )
        scope_id = self.scope_id
        references = list(record.context_references)
        if scope_id in references:
            raise TransferRefused(f"Line {number}: the context references name the Scope itself.", number)
        if self.check_references is not None:
            self.check_references(references)
        if self.conn.execute("SELECT 1 FROM scopes WHERE scope_id = ?", (scope_id,)).fetchone():
            raise ScopeIdTaken(
                f"The target already has a Scope {scope_id!r}; delete it first or import into another database."
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
                "Import them first (export each with `powercontext export`).",
                number,
            )
        values = [getattr(record, field) for field, _ in SCOPE_FIELDS]
        values[0] = scope_id
        self.limits.scope = record
        cursor = self.conn.execute(
            "INSERT INTO scopes ("
            + ", ".join(f for f, _ in SCOPE_FIELDS)
            + ") VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            values,
        )
        self.key = inserted_key(cursor)
        self.conn.executemany(
            "INSERT INTO scope_references (scope_key, position, referenced_key) VALUES (?, ?, ?)",
            [(self.key, position, found[ref]) for position, ref in enumerate(references)],
        )
        self.counts["scope"] = 1
        if self.progress is not None:
            self.progress.advance(1)

    def _values(self, kind: Kind, number: int, record: Any) -> tuple[object, ...]:
        self.limits.check(number, record)
        if kind.name == "artifact_revision":
            export_lines.check_payload(number, record.family, record.payload, proposal=False)
        elif kind.name == "candidate":
            export_lines.check_payload(number, record.family, record.payload, proposal=True)
        if kind.name == "memory_entry_version" and record.removed_revision is None:
            self.to_index += 1
        if kind.name == "artifact_head" and record.family in SEARCHED_FAMILIES:
            self.to_index += 1
        values = [getattr(record, column) for column, _ in kind.fields]
        if kind.name == "memory_entry_version":
            values[-1] = _expiry(number, record.expires_at)
        return (self.key, *values)

    def _flush(self, kind: Kind | None, rows: Sequence[tuple[object, ...]]) -> None:
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
            for name, announced in self.announced.items()
            if self.counts[name] != announced
        ]
        short += [
            f"{name} {n} of 0"
            for name, n in self.counts.items()
            if name != "scope" and n and name not in self.announced
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
        orphans = self.conn.execute(
            "SELECT COUNT(*) FROM memory_entry_versions v LEFT JOIN memory_entries e"
            " ON e.scope_key = v.scope_key AND e.entry_id = v.entry_id"
            " WHERE v.scope_key = ? AND e.entry_id IS NULL",
            (self.key,),
        ).fetchone()[0]
        if int(heads) != self.counts["artifact_head"] or int(headless) or int(orphans):
            raise TransferRefused(
                "The file is inconsistent: a head names a revision or version it does not hold, "
                "or a version an entry it does not hold. Nothing was imported."
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
            search.index_documents(self.conn, self.key, family, docs)
            after = docs[-1][0]
            indexed += len(docs)
            if self.progress is not None:
                self.progress.advance(len(docs))


def _expiry(number: int, value: object) -> str | None:
    """A version's `expires_at` as the store keeps it (UTC, its time form); absent is never."""
    if value is MISSING or value is None:
        return None
    found = instant(str(value))
    if found is None:
        raise TransferRefused(f"Line {number}: expires_at is not a real instant.", number)
    return found
