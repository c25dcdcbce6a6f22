"""The tests' fresh OceanBase databases are copies of one migrated database (tests/conftest.py,
`migrated_oceanbase`), not migrated each from empty: a copy must be what a migration from empty
makes, table for table, key for key, row for row, or every OceanBase test would run on a schema
no deployment has."""

from __future__ import annotations

from devtools.seekdb import SeekdbServer
from powercontext_runtime import backend_for
from powercontext_runtime.store.sql_store import SqlStore


def schema(url: str) -> dict[str, tuple[str, list[tuple[object, ...]]]]:
    """Each table's definition (its auto-increment counter left out) and rows, by name; of
    schema_migrations only the versions, as applied_at says when each was migrated."""
    backend = backend_for(url)
    conn = backend.connect()
    try:
        tables = [str(row[0]) for row in conn.execute(backend.list_tables).fetchall()]
        found = {}
        for table in tables:
            definition = str(conn.execute(f"SHOW CREATE TABLE {table}").fetchone()[1])
            kept = " ".join(part for part in definition.split() if not part.startswith("AUTO_INCREMENT="))
            columns = "version" if table == "schema_migrations" else "*"
            rows = sorted(tuple(row) for row in conn.execute(f"SELECT {columns} FROM {table}").fetchall())
            found[table] = (kept, rows)
        return found
    finally:
        backend.close(conn)


def test_a_copy_of_the_migrated_database_is_what_a_migration_from_empty_makes(
    seekdb: SeekdbServer, migrated_oceanbase: str
) -> None:
    fresh = seekdb.new_database_url()
    SqlStore(backend_for(fresh)).close()
    migrated = schema(fresh)
    assert len(migrated) > 20 and migrated["schema_migrations"][1]  # the whole schema, versions noted
    assert schema(seekdb.copy_database_url(migrated_oceanbase)) == migrated
