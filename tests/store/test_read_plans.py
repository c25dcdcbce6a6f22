"""On OceanBase, what a prepare reads before it knows its Scopes' keys reads only those Scopes' rows.

A search sends its Scopes' key lookup, their index statistics and Memory's expired heads as one
query, the last two selecting the Scopes by id. OceanBase planned the statistics' `scope_key IN
(SELECT ...)` as a hash join over every Scope's `search_stats` rows, read whole for each prepare
(1.0 ms at 3,000 Scopes against 0.14 for the join it now sends). Its plan, and the expired heads',
must reach their tables through the selected Scopes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from powercontext_runtime import backend_for, open_store
from powercontext_runtime.models import Scope
from powercontext_runtime.search import index_stats_joined_query
from powercontext_runtime.store import memory, memory_hygiene, scopes
from tests.conftest import database_env


def test_the_lookups_sent_with_the_scope_keys_read_only_the_selected_scopes(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    url = database_env(request, "oceanbase")["POWERCONTEXT_SERVER_DATABASE_URL"]
    store = open_store(url)
    try:
        for scope_id in ("s:1", "s:2", "s:3"):
            store.run(scopes.create_scope, Scope(scope_id, "Team", "", (), 1))
            # An entry that expired before the time asked about below, so both lookups find rows.
            store.run(
                memory.remember,
                scope_id,
                f"heron notes of {scope_id}",
                "fact",
                None,
                "2026-06-01T00:00:00+00:00",
            )
    finally:
        store.close()
    lookups = {
        "search_stats": index_stats_joined_query("scopes", *scopes.ids_where(["s:2", "s:3"])),
        "memory_entry_versions": memory_hygiene.expired_heads_joined_query(
            *scopes.ids_where(["s:2", "s:3"]), "2026-12-08T00:00:00+00:00"
        ),
    }
    backend = backend_for(url)
    conn = backend.connect()
    try:
        keys = {
            int(row[0])
            for row in conn.execute("SELECT scope_key FROM scopes WHERE scope_id IN ('s:2', 's:3')")
        }
        for table, (sql, params) in lookups.items():
            plan = "\n".join(str(row[0]) for row in conn.execute(f"EXPLAIN {sql}", params).fetchall())
            operators = [line for line in plan.splitlines() if line.startswith("|")]
            # The selected Scopes first, then the table through their keys.
            assert "NESTED-LOOP JOIN" in operators[1], (table, plan)
            assert not any("FULL SCAN" in line for line in operators), (table, plan)
            found = conn.execute(sql, params).fetchall()
            assert {int(row[0]) for row in found} == keys, table  # both Scopes' rows, no others
    finally:
        backend.close(conn)
