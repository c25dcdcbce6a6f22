"""The `powercontext.scope-export` file's parts that its writer (`scope_export`) and its reader
(`scope_transfer`, whose docstring describes the format) share: the line types and their tables,
the outcome and the failure of a transfer.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any

from ..errors import PowerContextError
from .backends import Backend
from .conn import Conn
from .export_lines import TransferRefused

FORMAT = "powercontext.scope-export"
VERSION = 1


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

# Each column with its JSON type ("s" string, "i" integer, "?" when it may be null, "-" when a null
# is left out of the line: a column a later release added, so that files without it still read
# and files of data that never uses it stay as they were), for the reader; the import holds lines
# to the contract's `ScopeExport*` schemas, which say the same and more.
SCOPE_FIELDS = (
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
class Kind:
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
KINDS = (
    Kind("counter", "scope_counters", (("name", "s"), ("value", "i")), "name", ""),
    Kind(
        "memory_revision",
        "memory_revisions",
        (("revision", "i"), ("operation", "s"), ("entry_id", "s"), ("created_at", "s")),
        "revision",
    ),
    Kind(
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
    Kind(
        "memory_entry_version",
        "memory_entry_versions",
        (
            ("entry_id", "s"),
            ("version_number", "i"),
            ("entry_version_id", "s"),
            ("text", "s"),
            ("added_revision", "i"),
            ("removed_revision", "i?"),
            ("expires_at", "s-"),
        ),
        "version_key",
    ),
    Kind("memory_erasure", "memory_erasures", (("entry_id", "s"), ("erased_revision", "i")), "entry_id", ""),
    Kind(
        "artifact_revision",
        "artifact_revisions",
        (("family", "s"), ("artifact_id", "s"), ("revision", "i"), ("payload", "s"), ("created_at", "s")),
        "revision_key",
    ),
    Kind(
        "artifact_head",
        "artifact_heads",
        (("family", "s"), ("artifact_id", "s"), ("revision", "i")),
        "revision_key",
    ),
    Kind(
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
BY_NAME = {kind.name: kind for kind in KINDS}
RANK = {kind.name: rank for rank, kind in enumerate(KINDS)}
# Tables a database may lack and still be exported: they came with later migrations.
OPTIONAL_TABLES = frozenset({"memory_erasures"})
# Columns that came with a later migration (by table and column: its version), exported as null
# from a database before it; the export reads a database as it is, never migrating it.
LATER_COLUMNS = {("memory_entry_versions", "expires_at"): 10}


def schema_version(conn: Conn) -> int:
    return int(conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0] or 0)


def known_version(backend: Backend) -> int:
    return max(migration.version for migration in backend.migrations)


def line(record: dict[str, Any]) -> bytes:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


@contextmanager
def transaction(backend: Backend, write: bool) -> Iterator[Conn]:
    """A connection of the transfer's own in one transaction, committed when the block ends if it
    writes, else rolled back (always when the block fails); a database error is `TransferFailed`,
    a write the database refuses as a duplicate is the file's fault (`TransferRefused`)."""
    try:
        conn = backend.connect()
    except backend.errors as exc:
        raise TransferFailed(exc) from exc
    committed = False
    try:
        backend.begin(conn, write=write)
        try:
            yield conn
            if write:
                backend.commit(conn)
                committed = True
        finally:
            if not committed:
                with suppress(*backend.errors):
                    backend.rollback(conn)
    except backend.errors as exc:
        if write and isinstance(exc, backend.duplicate_key) and not isinstance(exc, PowerContextError):
            raise TransferRefused(
                f"The database refused the file's rows ({exc}): the file holds conflicting rows, "
                "or the Scope was created meanwhile. Nothing was imported."
            ) from exc
        raise TransferFailed(exc) from exc
    finally:
        with suppress(*backend.errors):
            backend.close(conn)
