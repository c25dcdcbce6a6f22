"""A store operation is one family function, and `Store.run` runs it in a transaction of its kind.

What a caller relies on: a write cannot join the snapshot `reading()` holds (nothing is written);
an erasure's data is gone once it returns; the Runtime's public `offline` functions copy a
database and move one Scope through a file by URL, refusing an over-long line with the target
unchanged.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from powercontext_runtime import (
    MAX_EXPORT_LINE_BYTES,
    Store,
    TransferRefused,
    copy_database,
    export_scope_to,
    import_scope_from,
    open_store,
)
from powercontext_runtime.models import Scope
from powercontext_runtime.store import memory, scopes
from tests.conftest import database_env


def _url(request: pytest.FixtureRequest, backend: str, path: Path) -> str:
    return database_env(request, backend).get("POWERCONTEXT_SERVER_DATABASE_URL", f"sqlite:///{path}")


@pytest.fixture
def store(request: pytest.FixtureRequest, backend: str, tmp_path: Path) -> Iterator[Store]:
    opened = open_store(_url(request, backend, tmp_path / "ops.sqlite3"))
    yield opened
    opened.close()


def test_a_write_inside_a_read_snapshot_is_refused_and_writes_nothing(store: Store) -> None:
    store.run(scopes.create_scope, Scope("s:1", "", "", (), 1))
    with store.reading(), pytest.raises(RuntimeError):
        store.run(memory.remember, "s:1", "never stored", "fact", None)
    assert store.run(memory.list_memory_entries, "s:1", 0, 10) == []


def test_operations_answer_as_their_family_functions_say(store: Store) -> None:
    created = store.run(scopes.create_scope, Scope("s:1", "Team", "", (), 1))
    assert (created.scope_id, created.version) == ("s:1", 1)
    first = store.run(memory.remember, "s:1", "heron by the river", "fact", None)
    batch = store.run(memory.remember_batch, "s:1", [("a", "fact", None), ("b", "note", None)], 1)
    assert [(c.revision, duplicate) for c, duplicate in batch] == [(2, False), (3, False)]
    assert store.run(memory.erase_memory_entry, "s:1", first.citation.entry_id) == (4, 1)
    listed = [entry.text for _, entry in store.run(memory.list_memory_entries, "s:1", 0, 10)]
    assert listed == ["a", "b"]
    store.run(scopes.delete_scope, "s:1")
    assert store.run(scopes.get_scope, "s:1") is None


def test_copy_and_a_scope_moved_through_a_file_by_url(tmp_path: Path) -> None:
    source, copied, moved = (f"sqlite:///{tmp_path / name}.sqlite3" for name in ("a", "b", "c"))
    store = open_store(source)
    store.run(scopes.create_scope, Scope("s:1", "Team", "", (), 1))
    store.run(memory.remember, "s:1", "heron by the river", "fact", None)
    store.close()
    assert sum(copy_database(source, copied).rows.values()) > 0
    exported = io.BytesIO()
    assert export_scope_to(copied, "s:1", exported.write).scope_id == "s:1"
    report = import_scope_from(moved, io.BytesIO(exported.getvalue()), scope_id="s:2")
    assert report.scope_id == "s:2"
    store = open_store(moved)
    try:
        assert [e.text for _, e in store.run(memory.list_memory_entries, "s:2", 0, 5)] == [
            "heron by the river"
        ]
    finally:
        store.close()


def test_an_import_with_an_over_long_line_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    source, target = (f"sqlite:///{tmp_path / name}.sqlite3" for name in ("a", "b"))
    store = open_store(source)
    store.run(scopes.create_scope, Scope("s:1", "", "", (), 1))
    store.close()
    exported = io.BytesIO()
    export_scope_to(source, "s:1", exported.write)
    header = exported.getvalue().split(b"\n", 1)[0] + b"\n"
    hostile = header + b'{"type": "memory_entry", "text": "' + b"x" * MAX_EXPORT_LINE_BYTES + b'"}\n'
    with pytest.raises(TransferRefused):
        import_scope_from(target, io.BytesIO(hostile))
    store = open_store(target)
    try:
        assert store.run(scopes.list_scopes, None, 10) == []
    finally:
        store.close()
