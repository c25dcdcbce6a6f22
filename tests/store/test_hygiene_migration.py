"""Migration 10 on a database from before it (issue 33): its data step hashes every active head, so
the duplicate check finds entries remembered before the upgrade, and never retired ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from powercontext_runtime import backend_for
from powercontext_runtime.models import MemoryCitation, Scope
from powercontext_runtime.store import memory, scopes
from powercontext_runtime.store.sql_store import SqlStore

from .test_reindex_migration import database_url, rewritten


def back_to_version_9(url: str, backend: str) -> None:
    """Take migration 10's columns and indexes away again, as a database written before it."""
    with rewritten(url) as conn:
        for index, table in (
            ("memory_entries_text_hash", "memory_entries"),
            ("memory_versions_expiry", "memory_entry_versions"),
        ):
            conn.execute(f"DROP INDEX {index}" + ("" if backend == "sqlite" else f" ON {table}"))
        conn.execute("ALTER TABLE memory_entries DROP COLUMN text_hash")
        conn.execute("ALTER TABLE memory_entry_versions DROP COLUMN expires_at")
        conn.execute("DELETE FROM schema_migrations WHERE version = 10")


@pytest.mark.parametrize("backend", ["sqlite", "oceanbase"])
def test_an_upgrade_hashes_the_active_heads_for_the_duplicate_check(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = database_url(backend, tmp_path, request)
    store = SqlStore(backend_for(url))
    store.run(scopes.create_scope, Scope("s:1", "", "", (), 1))
    kept = store.run(memory.remember, "s:1", "Releases ship on Fridays", "fact", None)
    gone = store.run(memory.remember, "s:1", "Keys rotate monthly", "fact", None)
    store.run(memory.retire_memory_entry, "s:1", MemoryCitation(2, gone.citation.entry_id, "entry-2-v1"))
    store.close()
    back_to_version_9(url, backend)

    upgraded = SqlStore(backend_for(url))
    try:
        again = upgraded.run(memory.remember, "s:1", "releases  SHIP on fridays", "fact", None, None, True)
        assert (again.duplicate, again.citation.entry_id) == (True, kept.citation.entry_id)
        retired = upgraded.run(memory.remember, "s:1", "Keys rotate monthly", "fact", None, None, True)
        assert (retired.duplicate, retired.citation.entry_id) == (False, "entry-3")
    finally:
        upgraded.close()
