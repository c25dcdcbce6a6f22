"""`powercontext copy-store`: a whole store moved into an empty database, SQLite ⇄ OceanBase.

What a user relies on: every row arrives with its keys, the copy answers every read exactly as the
source does and keeps accepting writes, a target holding data is refused untouched, and a copy
that fails part-way leaves the target empty, as it was (brief: a failed write loses nothing).
"""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from powercontext_api.models import PrepareContextRequest, RememberRequest, ScopeCreateRequest
from powercontext_runtime import Settings, backend_for, open_application
from powercontext_runtime.search._postings import unpack_postings
from powercontext_runtime.store import copy as store_copy
from powercontext_runtime.store.copy import TABLES, CopyFailed, CopyRefused, copy_store
from powercontext_server.cli import main as server_main

from .faults import FailingBackend
from .test_backend_parity import observe, seed


def _settings(url: str) -> Settings:
    return Settings(database_url=url, assembly_max_entries=8)


def seeded(url: str) -> None:
    app = open_application(_settings(url))
    try:
        seed(app)
    finally:
        app.close()


def observed(url: str) -> list[object]:
    app = open_application(_settings(url))
    try:
        return observe(app)
    finally:
        app.close()


def table_rows(url: str) -> dict[str, list[tuple[Any, ...]]]:
    backend = backend_for(url)
    conn = backend.connect()
    try:
        rows = {t: sorted(tuple(r) for r in conn.execute(f"SELECT * FROM {t}").fetchall()) for t in TABLES}
    finally:
        backend.close(conn)
    # A single posting is an integer in SQLite and its digits in OceanBase's LONGBLOB: compare the
    # postings each row stands for.
    rows["search_segments"] = [(*row[:4], decoded(row[3], row[4])) for row in rows["search_segments"]]
    rows["search_runs"] = [(*row[:4], decoded(row[2], row[4])) for row in rows["search_runs"]]
    return rows


def decoded(segment: int, packed: int | bytes) -> tuple[tuple[int, ...], tuple[int, ...]]:
    keys, tfs = unpack_postings(segment, packed)
    return tuple(keys.tolist()), tuple(tfs.tolist())


@pytest.mark.parametrize(
    ("source", "target"),
    [("sqlite-a", "sqlite-b"), ("sqlite-a", "oceanbase-b"), ("oceanbase-a", "sqlite-b")],
)
def test_copy_holds_every_row_answers_alike_and_accepts_writes(
    urls: dict[str, str], source: str, target: str
) -> None:
    seeded(urls[source])
    report = copy_store(backend_for(urls[source]), backend_for(urls[target]))

    before = table_rows(urls[source])
    assert table_rows(urls[target]) == before
    assert report.rows == {table: len(rows) for table, rows in before.items()}
    assert report.rows["search_segments"] > 100  # the copy has substance
    assert observed(urls[target]) == observed(urls[source])

    # New keys continue after the copied ones: a remember lands and is found, on both sides alike.
    for url in (urls[source], urls[target]):
        app = open_application(_settings(url))
        try:
            entry = app.remember(
                RememberRequest.model_validate({"scope_id": "project:a", "text": "zebra crossing"})
            )
            found = app.prepare_context(
                PrepareContextRequest.model_validate({"scope_id": "project:a", "query": "zebra"})
            )
        finally:
            app.close()
        assert entry.citation.entry_id in found.content
    # ...under the same keys (only the write times differ).
    after_source, after_target = table_rows(urls[source]), table_rows(urls[target])
    for table in ("memory_entry_versions", "search_docs", "search_segments", "search_stats"):
        assert after_target[table] == after_source[table]


@pytest.mark.parametrize("target", ["sqlite-b", "oceanbase-b"])
def test_copy_refuses_a_target_that_holds_data_and_leaves_it_untouched(
    urls: dict[str, str], target: str
) -> None:
    seeded(urls["sqlite-a"])
    app = open_application(_settings(urls[target]))
    try:
        app.create_scope(ScopeCreateRequest.model_validate({"scope_id": "already:here"}))
    finally:
        app.close()
    before = table_rows(urls[target])

    with pytest.raises(CopyRefused, match="already holds data"):
        copy_store(backend_for(urls["sqlite-a"]), backend_for(urls[target]))
    assert table_rows(urls[target]) == before


def test_copy_refuses_a_target_holding_other_tables(urls: dict[str, str]) -> None:
    seeded(urls["sqlite-a"])
    open_application(_settings(urls["sqlite-b"])).close()
    other = sqlite3.connect(urls["sqlite-b"].removeprefix("sqlite:///"))
    other.execute("CREATE TABLE someone_elses (x INTEGER)")
    other.commit()
    other.close()

    with pytest.raises(CopyRefused, match="unknown: someone_elses"):
        copy_store(backend_for(urls["sqlite-a"]), backend_for(urls["sqlite-b"]))
    assert all(rows == [] for rows in table_rows(urls["sqlite-b"]).values())


def test_a_copy_that_fails_part_way_leaves_the_target_empty(
    urls: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    seeded(urls["sqlite-a"])
    monkeypatch.setattr(store_copy, "COMMIT_ROWS", 10)  # earlier tables are committed before the fault
    failing = FailingBackend(backend_for(urls["sqlite-b"]), "search_log")

    with pytest.raises(CopyFailed) as failed:
        copy_store(backend_for(urls["sqlite-a"]), failing)  # type: ignore[arg-type]
    assert failed.value.emptied
    assert all(rows == [] for rows in table_rows(urls["sqlite-b"]).values())
    # Emptied, the target takes the whole copy afterwards.
    copy_store(backend_for(urls["sqlite-a"]), backend_for(urls["sqlite-b"]))
    assert table_rows(urls["sqlite-b"]) == table_rows(urls["sqlite-a"])


def test_the_command_copies_and_refuses_with_exit_statuses(
    urls: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    seeded(urls["sqlite-a"])
    assert server_main(["copy-store", urls["sqlite-a"], urls["sqlite-b"]]) == 0
    out = capsys.readouterr().out
    # Not a terminal: no progress, only the summary.
    (line,) = out.splitlines()
    assert line.startswith(
        f"copied {sum(len(rows) for rows in table_rows(urls['sqlite-a']).values())} rows in "
    )

    assert server_main(["copy-store", urls["sqlite-a"], urls["sqlite-b"]]) == 2
    assert "already holds data" in capsys.readouterr().err
    assert server_main(["copy-store", urls["sqlite-a"], urls["sqlite-a"]]) == 2
    assert "same database" in capsys.readouterr().err
    assert server_main(["copy-store", urls["sqlite-a"], "postgres://x/y"]) == 2
    assert "must start with" in capsys.readouterr().err
