"""Whole-database work by database URL, with no application open: copy a store into an empty
database (`powercontext copy-store`), export or import one Scope as a file (`powercontext
export` / `import`), and ask whether the embedding leg's vectors are all in. The server's CLI and
bench call these; the served export and import are the application's `export_scope` /
`import_scope` operations.

Each call opens the database(s) it names and lets go of them before it returns.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import BinaryIO

from .bootstrap import backend_for
from .store.copy import CopyFailed, CopyRefused, CopyReport, copy_store
from .store.export_lines import MAX_LINE_BYTES, TransferRefused
from .store.progress import Progress
from .store.scope_export import export_scope
from .store.scope_transfer import import_scope
from .store.sql_store import VECTOR_SOURCES
from .store.transfer_format import TransferFailed, TransferReport

__all__ = [
    "MAX_EXPORT_LINE_BYTES",
    "CopyFailed",
    "CopyRefused",
    "CopyReport",
    "Progress",
    "TransferFailed",
    "TransferRefused",
    "TransferReport",
    "copy_database",
    "export_scope_to",
    "import_scope_from",
]

# The longest line an export may hold; the import refuses a longer one.
MAX_EXPORT_LINE_BYTES = MAX_LINE_BYTES


def copy_database(source_url: str, target_url: str, progress: Progress | None = None) -> CopyReport:
    """Copy all of `source_url` into the empty `target_url`, both brought to the current schema
    first. `CopyRefused` when the schemas differ or the target holds data; `CopyFailed` on a
    database error (its `emptied` tells whether the target is empty again)."""
    return copy_store(backend_for(source_url), backend_for(target_url), progress)


def export_scope_to(
    url: str, scope_id: str, write: Callable[[bytes], object], progress: Progress | None = None
) -> TransferReport:
    """Write Scope `scope_id` of the database `url` as export lines through `write`, from one
    snapshot, reading the database as it is. `TransferRefused` for no such Scope or a database
    that is not PowerContext's or is newer than this release; `TransferFailed` on a database error."""
    backend = backend_for(url)
    try:
        return export_scope(backend, scope_id, write, progress)
    finally:
        backend.stop()


def import_scope_from(
    url: str, file: BinaryIO, progress: Progress | None = None, scope_id: str | None = None
) -> TransferReport:
    """Recreate the Scope exported in `file` in the database `url` (created or upgraded first) in
    one transaction, under its own id or `scope_id`. `TransferRefused` (not an export, unknown
    version, Scope id taken, a referenced Scope missing) or `TransferFailed` leave it unchanged."""
    backend = backend_for(url)
    try:
        return import_scope(backend, _bounded_lines(file), progress, scope_id)
    finally:
        backend.stop()


def vectors_pending(url: str, model: str, dims: int) -> bool:
    """Whether some document of the database `url` (a Memory head version, an Experience or Topic
    Memory head revision) still waits for its vector of `model` at `dims`: what a running server's
    background embedder has yet to embed, read from the embedder's own queues."""
    backend = backend_for(url)
    conn = backend.connect()
    try:
        backend.begin(conn, False)
        waiting = any(source.pending(conn, model, dims, 0, 1) for source in VECTOR_SOURCES)
        backend.commit(conn)
    finally:
        backend.close(conn)
        backend.stop()
    return waiting


def _bounded_lines(file: BinaryIO) -> Iterator[bytes]:
    """The file's lines, none read past the longest an export may hold: a longer one comes as its
    first `MAX_EXPORT_LINE_BYTES + 1` bytes, which the import refuses, so memory stays bounded."""
    return iter(functools.partial(file.readline, MAX_EXPORT_LINE_BYTES + 1), b"")
