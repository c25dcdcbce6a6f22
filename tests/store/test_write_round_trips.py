"""Writes on OceanBase in few round trips, with the same rows and the same all-or-nothing as before.

A remember sends a bounded number of statements whatever the size of its batch; its last rows go
as one multi-statement query (`store/mysql_pipeline.py`), split where a query would grow too
long. Values are escaped there as in any query, and a statement failing in the middle of one
leaves the database as it was.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymysql.connections
import pytest

from powercontext_runtime import Store, open_store
from powercontext_runtime.errors import RevisionConflict
from powercontext_runtime.models import Scope
from powercontext_runtime.search import parse_query
from powercontext_runtime.store import memory, mysql_pipeline, scopes
from powercontext_runtime.store.conn import Conn
from powercontext_runtime.store.op import writes
from tests.conftest import database_env

# Round trips of a remember: BEGIN, the Scope's lock, the duplicate check, the version rows, the
# rest of the rows with COMMIT; a batch also reads its version keys back.
SINGLE_REMEMBER = 5
BATCH_REMEMBER = 6
# A revise reads what it replaces (about a dozen statements) and writes the new version; taking the
# old one out of a segment's rows is one round trip however many terms it shares with others.
REVISE = 25


def _url(request: pytest.FixtureRequest, backend: str, path: Path) -> str:
    return database_env(request, backend).get("POWERCONTEXT_SERVER_DATABASE_URL", f"sqlite:///{path}")


@pytest.fixture
def store(request: pytest.FixtureRequest, backend: str, tmp_path: Path) -> Iterator[Store]:
    opened = open_store(_url(request, backend, tmp_path / "writes.sqlite3"))
    opened.run(scopes.create_scope, Scope("s:1", "Team", "", (), 1))
    yield opened
    opened.close()


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every command this thread sends to OceanBase from now on (each one round trip)."""
    commands: list[str] = []
    real = pymysql.connections.Connection._execute_command
    me = threading.current_thread()

    def counted(self: Any, command: int, sql: str | bytes) -> Any:
        if threading.current_thread() is me:
            commands.append(sql if isinstance(sql, str) else sql.decode("utf-8", "replace"))
        return real(self, command, sql)

    monkeypatch.setattr(pymysql.connections.Connection, "_execute_command", counted)
    return commands


def _texts(prefix: str, count: int) -> list[str]:
    return [f"{prefix} heron number {n} by the river, 鹭 {n} 号" for n in range(count)]


@pytest.mark.parametrize("backend", ["oceanbase"])
def test_a_remember_and_a_batch_take_a_bounded_number_of_round_trips(store: Store, sent: list[str]) -> None:
    store.run(memory.remember, "s:1", "warm up", "fact", None)
    for text in _texts("single", 5):
        sent.clear()
        store.run(memory.remember, "s:1", text, "fact", None)
        assert len(sent) <= SINGLE_REMEMBER, sent
        # The rows that need no answer go with the COMMIT.
        assert sent[-1].startswith("INSERT") and sent[-1].endswith(";COMMIT"), sent[-1][-80:]
    for size in (10, 100):
        sent.clear()
        store.run(memory.remember_batch, "s:1", [(t, "fact", None) for t in _texts(f"b{size}", size)], None)
        assert len(sent) <= BATCH_REMEMBER, [s[:80] for s in sent]
    listed = [entry.text for _, entry in store.run(memory.list_memory_entries, "s:1", 0, 200)]
    assert listed == ["warm up", *_texts("single", 5), *_texts("b10", 10), *_texts("b100", 100)]


@pytest.mark.parametrize("backend", ["oceanbase"])
def test_revising_an_entry_of_a_batch_does_not_cost_a_round_trip_per_term(
    store: Store, sent: list[str]
) -> None:
    words = [f"word{n}" for n in range(40)]
    texts = [" ".join([*words, f"entry{n}"]) for n in range(20)]  # one segment, 40 shared terms
    cited = store.run(memory.remember_batch, "s:1", [(t, "fact", None) for t in texts], None)
    sent.clear()
    store.run(memory.revise_memory_entry, "s:1", cited[3][0], "kingfisher on the bank")
    assert len(sent) <= REVISE, [s[:80] for s in sent]
    assert [h.text for h in store.search_memory(["s:1"], parse_query("entry3"), 3)[0]] == []
    hits = store.search_memory(["s:1"], parse_query("word7"), 30)[0]
    assert sorted(h.text for h in hits) == sorted(t for n, t in enumerate(texts) if n != 3)


@pytest.mark.parametrize("backend", ["oceanbase"])
def test_a_long_batch_goes_in_several_queries_none_longer_than_the_bound(
    store: Store, sent: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mysql_pipeline, "MAX_QUERY_CHARS", 3000)
    texts = _texts("long", 60)
    sent.clear()
    cited = store.run(memory.remember_batch, "s:1", [(t, "fact", None) for t in texts], None)
    multi_row = [s for s in sent if s.startswith("INSERT INTO memory_entries")]
    assert len(multi_row) > 1  # the entry rows alone outgrow one query
    # Each query holds whole statements within the bound, but a statement longer than it alone.
    assert all(len(s) <= 3000 or ";" not in s for s in sent)
    listed = [entry.text for _, entry in store.run(memory.list_memory_entries, "s:1", 0, 100)]
    assert listed == texts
    assert [c.revision for c, _ in cited] == list(range(1, 61))
    hits = store.search_memory(["s:1"], parse_query("long heron 17"), 3)[0]
    assert hits[0].text == texts[17]


AWKWARD = [
    "it's a 'quoted' \"text\"; DROP TABLE scopes; --",
    "back\\slash \\' and \\\\ end\\",
    "percent %s %% %(name)s and ? marks ?",
    "emoji 😀 and 汉字 and a NUL \x00 inside",
    "semicolons ;;; and a newline\nand a tab\t",
]


def test_texts_with_sql_characters_are_stored_as_sent_and_run_nothing(store: Store) -> None:
    single = store.run(memory.remember, "s:1", AWKWARD[0], "fact", None)
    batch = store.run(memory.remember_batch, "s:1", [(t, "note", None) for t in AWKWARD[1:]], None)
    listed = [(entry.text, entry.kind) for _, entry in store.run(memory.list_memory_entries, "s:1", 0, 10)]
    assert listed == [(AWKWARD[0], "fact"), *[(t, "note") for t in AWKWARD[1:]]]
    assert [c.revision for c, _ in batch] == [2, 3, 4, 5] and single.citation.revision == 1
    assert store.run(scopes.get_scope, "s:1") is not None  # the table is still there
    hits = store.search_memory(["s:1"], parse_query("semicolons newline"), 3)[0]
    assert hits[0].text == AWKWARD[4]


@writes
def _rename_then_clash(conn: Conn, scope_id: str) -> None:
    """Changes the Scope's title, then inserts a second Scope with its id, in one `execute_all`."""
    conn.execute_all(
        [
            ("UPDATE scopes SET title = ? WHERE scope_id = ?", [("renamed", scope_id)]),
            (
                "INSERT INTO scopes (scope_id, title, summary, version, created_at, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                [(scope_id, "clash", "", 1, "2026-01-01", "2026-01-01")],
            ),
        ]
    )


@writes
def _write_then_read(conn: Conn, scope_id: str) -> str:
    """Renames the Scope in one `execute_all`, then reads the title back in the same transaction."""
    conn.execute_all([("UPDATE scopes SET title = ? WHERE scope_id = ?", [("renamed", scope_id)])])
    return str(conn.execute("SELECT title FROM scopes WHERE scope_id = ?", (scope_id,)).fetchone()[0])


def test_a_write_reads_what_it_sent_in_one_go_before_it_commits(store: Store) -> None:
    assert store.run(_write_then_read, "s:1") == "renamed"
    scope = store.run(scopes.get_scope, "s:1")
    assert scope is not None and scope.title == "renamed"


@pytest.mark.parametrize("backend", ["oceanbase"])
def test_a_read_begins_its_snapshot_in_one_round_trip(store: Store, sent: list[str]) -> None:
    store.run(memory.remember, "s:1", "heron by the river", "fact", None)
    store.search_memory(["s:1"], parse_query("heron"), 3)  # the mirror reads the Scope once
    sent.clear()
    hits = store.search_memory(["s:1"], parse_query("heron"), 3)[0]
    assert [h.text for h in hits] == ["heron by the river"]
    begun = [s for s in sent if "START TRANSACTION READ ONLY" in s]
    assert begun == ["SET TRANSACTION ISOLATION LEVEL REPEATABLE READ;START TRANSACTION READ ONLY"]


@writes
def _rename_then_refuse(conn: Conn, scope_id: str) -> None:
    """Renames the Scope in one `execute_all` (held back on OceanBase), then refuses the write."""
    conn.execute_all([("UPDATE scopes SET title = ? WHERE scope_id = ?", [("renamed", scope_id)])])
    raise RevisionConflict("refused after the rows were written")


def test_a_write_refused_after_its_rows_leaves_them_out_of_the_next_one_too(store: Store) -> None:
    """Rows held for the COMMIT that never came are dropped with the transaction: the next write
    on the same connection does not carry them along."""
    with pytest.raises(RevisionConflict):
        store.run(_rename_then_refuse, "s:1")
    store.run(memory.remember, "s:1", "heron by the river", "fact", None)
    scope = store.run(scopes.get_scope, "s:1")
    assert scope is not None and scope.title == "Team"
    listed = [entry.text for _, entry in store.run(memory.list_memory_entries, "s:1", 0, 10)]
    assert listed == ["heron by the river"]


def test_a_statement_failing_after_others_in_one_go_leaves_the_data_as_before(store: Store) -> None:
    store.run(memory.remember, "s:1", "heron by the river", "fact", None)
    with pytest.raises(RevisionConflict):
        store.run(_rename_then_clash, "s:1")
    scope = store.run(scopes.get_scope, "s:1")
    assert scope is not None and scope.title == "Team"
    listed = [entry.text for _, entry in store.run(memory.list_memory_entries, "s:1", 0, 10)]
    assert listed == ["heron by the river"]
    # The connection is whole again: the next write and read go through.
    store.run(memory.remember, "s:1", "kingfisher on the bank", "fact", None)
    hits = store.search_memory(["s:1"], parse_query("kingfisher"), 3)[0]
    assert [h.text for h in hits] == ["kingfisher on the bank"]
