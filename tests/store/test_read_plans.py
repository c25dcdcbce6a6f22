"""On OceanBase, what a prepare reads before it knows its Scopes' keys reads only those Scopes' rows.

A search sends its Scopes' key lookup, their index statistics and Memory's expired heads as one
query, the last two selecting the Scopes by id. OceanBase planned the statistics' `scope_key IN
(SELECT ...)` as a hash join over every Scope's `search_stats` rows, read whole for each prepare
(1.0 ms at 3,000 Scopes against 0.14 for the join it now sends). Its plan, and the expired heads',
must reach their tables through the selected Scopes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from powercontext_runtime import backend_for, open_store
from powercontext_runtime.models import Scope
from powercontext_runtime.search import parse_query
from powercontext_runtime.store import backends, memory, scopes
from tests.conftest import database_env


def test_the_lookups_sent_with_the_scope_keys_read_only_the_selected_scopes(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = database_env(request, "oceanbase")["POWERCONTEXT_SERVER_DATABASE_URL"]
    store = open_store(url)
    sent: list[tuple[str, Sequence[object]]] = []
    try:
        for scope_id in ("s:1", "s:2", "s:3"):
            store.run(scopes.create_scope, Scope(scope_id, "Team", "", (), 1))
            # An entry that has expired, so the expired heads' lookup finds rows too.
            store.run(
                memory.remember,
                scope_id,
                f"heron notes of {scope_id}",
                "fact",
                None,
                "2026-06-01T00:00:00+00:00",
            )
        store.run(memory.remember, "s:2", "heron by the river", "fact", None)
        real = backends._MysqlConn.read_all

        def recorded(self: backends._MysqlConn, queries: Sequence[tuple[str, Sequence[object]]]) -> Any:
            sent.extend(queries)
            return real(self, queries)

        monkeypatch.setattr(backends._MysqlConn, "read_all", recorded)
        # What a search of two Scopes sends before it ranks, as a prepare of a Scope with a reference does.
        hits = store.search_memory(["s:2", "s:3"], parse_query("heron"), 8)
        assert [h.text for h in hits[0]] == ["heron by the river"]
    finally:
        store.close()
    lookups = {
        table: [(sql, params) for sql, params in sent if f"JOIN {table} " in sql]
        for table in ("search_stats", "memory_entry_versions")
    }
    backend = backend_for(url)
    conn = backend.connect()
    try:
        keys = {
            int(row[0])
            for row in conn.execute("SELECT scope_key FROM scopes WHERE scope_id IN ('s:2', 's:3')")
        }
        for table, found_lookups in lookups.items():
            assert len(found_lookups) == 1, (table, [sql for sql, _ in sent])
            sql, params = found_lookups[0]
            plan = "\n".join(str(row[0]) for row in conn.execute(f"EXPLAIN {sql}", params).fetchall())
            operators = [line for line in plan.splitlines() if line.startswith("|")]
            # The selected Scopes first, then the table through their keys.
            assert "NESTED-LOOP JOIN" in operators[1], (table, plan)
            assert not any("FULL SCAN" in line for line in operators), (table, plan)
            rows = conn.execute(sql, params).fetchall()
            assert {int(row[0]) for row in rows} == keys, table  # both Scopes' rows, no others
    finally:
        backend.close(conn)
