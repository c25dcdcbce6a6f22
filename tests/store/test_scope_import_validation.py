"""Issue 37 item 5: an import holds every line to the contract (the generated `ScopeExport*` models
and their bounds) and refuses the whole file, importing nothing, with a one-line message.

Before, an export whose Scope line said `"version": 0` imported, and afterwards `GET /v1/scopes`
and the Scope's reads answered 500; ids with `/` or over the contract's length imported and could
never be addressed or erased. Each hostile file here is a real export with one row changed.
"""

from __future__ import annotations

import contextlib
import json
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from powercontext_api.models import (
    CandidateDecisionRequest,
    ListScopesParameters,
    ProposeExperienceRequest,
    ProposeProfileRequest,
    PutTopicRequest,
    RememberBatchRequest,
    ReviseEntryRequest,
    ScopeCreateRequest,
)
from powercontext_runtime import ScopedContextApplication, Settings, open_application
from powercontext_server.cli import main as server_main

from ..conftest import database_env
from .test_scope_transfer import table_rows

SCOPE = "project:hostile"
Record = dict[str, Any]
Edit = Callable[[Record, list[Record]], None]  # (header, rows) -> None, changing them in place


def seed(app: ScopedContextApplication, scope_id: str = SCOPE) -> None:
    """A small Scope with a row of every type: revised entries, an Experience, a Profile, a topic,
    a pending Candidate."""
    app.create_scope(ScopeCreateRequest(scope_id=scope_id, title="Hostile"))
    texts = [{"text": f"note {i} deploy gateway"} for i in range(6)]
    cited = app.remember_batch(RememberBatchRequest.model_validate({"scope_id": scope_id, "entries": texts}))
    app.revise_memory_entry(
        ReviseEntryRequest.model_validate(
            {"scope_id": scope_id, "citation": cited.citations[0].model_dump(), "text": "note 0 revised"}
        )
    )
    fields = {k: f"{k} text" for k in ("situation", "action", "outcome", "lesson")}
    proposed = app.propose_experience(
        ProposeExperienceRequest.model_validate({"scope_id": scope_id, **fields})
    )
    app.approve_candidate(
        CandidateDecisionRequest(scope_id=scope_id, candidate_id=proposed.candidate_id, expected_version=1)
    )
    app.propose_profile(ProposeProfileRequest(scope_id=scope_id, content="Prefers short answers."))
    app.put_topic(PutTopicRequest(scope_id=scope_id, title="Gateway", summary="How we deploy", detail="d"))


def first(kind: str, edit: Callable[[Record], None]) -> Edit:
    """Change the first row of type `kind`."""

    def apply(header: Record, rows: list[Record]) -> None:
        edit(next(row for row in rows if row["type"] == kind))

    return apply


def on_header(edit: Callable[[Record], None]) -> Edit:
    return lambda header, rows: edit(header)


def both_ids(scope_id: str) -> Edit:
    """The header and the Scope line name `scope_id` (as a file exported under it would)."""

    def apply(header: Record, rows: list[Record]) -> None:
        header["scope_id"] = scope_id
        first("scope", setter("scope_id", scope_id))(header, rows)

    return apply


def setter(field: str, value: Any) -> Callable[[Record], None]:
    return lambda row: row.__setitem__(field, value)


def drop_entry(header: Record, rows: list[Record], entry_id: str) -> None:
    """The entry's line left out (and counted out), its versions kept."""
    rows[:] = [r for r in rows if not (r["type"] == "memory_entry" and r["entry_id"] == entry_id)]
    header["rows"]["memory_entry"] -= 1


def payload(**fields: Any) -> Callable[[Record], None]:
    def edit(row: Record) -> None:
        row["payload"] = json.dumps({**json.loads(row["payload"]), **fields})

    return edit


HOSTILE: dict[str, Edit] = {
    "scope version 0": first("scope", setter("version", 0)),
    "scope version true": first("scope", setter("version", True)),
    "negative memory revision": first("scope", setter("memory_revision", -1)),
    "scope id with a slash": both_ids("project/evil"),
    "scope id over 256 characters": both_ids("project:" + "x" * 300),
    "blank scope id": both_ids("   "),
    "over-long title": first("scope", setter("title", "t" * 513)),
    "negative row count": on_header(lambda h: h["rows"].__setitem__("counter", -3)),
    "bad timestamp": first("memory_revision", setter("created_at", "yesterday")),
    "unknown memory operation": first("memory_revision", setter("operation", "explode")),
    "entry id with a slash": first("memory_entry", setter("entry_id", "entry-1/x")),
    "entry id not its number": first("memory_entry", setter("entry_id", "entry-5")),
    "entry number beyond the counter": first("scope", setter("entry_counter", 2)),
    "bad kind": first("memory_entry", setter("kind", "Not A Kind")),
    "head version 0": first("memory_entry", setter("head_version", 0)),
    "version of an entry the file lacks": lambda header, rows: drop_entry(header, rows, "entry-6"),
    "version id not its numbers": first("memory_entry_version", setter("entry_version_id", "entry-1-v9")),
    "over-long text": first("memory_entry_version", setter("text", "x" * 16001)),
    "blank text": first("memory_entry_version", setter("text", " \n ")),
    "revision beyond the Scope's": first("memory_entry_version", setter("added_revision", 10**6)),
    "bad counter name": first("counter", setter("name", "hologram")),
    "bad family": first("artifact_revision", setter("family", "hologram")),
    "artifact id with a slash": first("artifact_revision", setter("artifact_id", "experience/1")),
    "over-long Experience lesson": first("artifact_revision", payload(lesson="l" * 8001)),
    "payload with another field": first("artifact_revision", payload(extra="x")),
    "payload not JSON": first("artifact_revision", setter("payload", "{not json")),
    "bad Candidate state": first("candidate", setter("state", "maybe")),
    "Candidate version 0": first("candidate", setter("version", 0)),
    "Candidate id not its number": first("candidate", setter("candidate_id", "candidate-77")),
    "approved Candidate without its revision": first("candidate", setter("committed_revision", None)),
    "pending Candidate with a revision": first("candidate", setter("state", "pending")),
    "unknown field": first("memory_entry", setter("surprise", 1)),
}


def hostile(export: bytes, edit: Edit) -> bytes:
    """The export with `edit` applied to its header and rows."""
    header, *rows = (json.loads(line) for line in export.splitlines())
    edit(header, rows)
    return b"".join(json.dumps(r, ensure_ascii=False).encode() + b"\n" for r in [header, *rows])


def exported_seed(tmp_path: Path, scope_id: str = SCOPE) -> Path:
    """`seed`'s Scope in a database of its own, exported with `powercontext export`."""
    source = f"sqlite:///{tmp_path / 'source.sqlite3'}"
    with contextlib.closing(open_application(Settings(database_url=source))) as app:
        seed(app, scope_id)
    good = tmp_path / "good.jsonl"
    assert server_main(["export", scope_id, "-o", str(good), "--database-url", source]) == 0
    return good


@pytest.fixture
def database(request: pytest.FixtureRequest, backend: str, tmp_path: Path) -> str:
    env = database_env(request, backend)
    return env.get("POWERCONTEXT_SERVER_DATABASE_URL", f"sqlite:///{tmp_path / 'target.sqlite3'}")


def test_every_hostile_file_is_refused_in_one_line_and_nothing_is_imported(
    database: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = exported_seed(tmp_path)
    with contextlib.closing(open_application(Settings(database_url=database))) as target:
        seed(target, "project:other")  # a served database, other Scopes in it
    before = table_rows(database)
    capsys.readouterr()
    for name, edit in HOSTILE.items():
        path = tmp_path / "hostile.jsonl"
        path.write_bytes(hostile(good.read_bytes(), edit))
        assert server_main(["import", str(path), "--database-url", database]) == 2, name
        err = capsys.readouterr().err
        assert err.startswith("powercontext: ") and err.count("\n") == 1, (name, err)
        assert table_rows(database) == before, name
    # The file as exported still imports, and its Scope answers.
    assert server_main(["import", str(good), "--database-url", database]) == 0
    with contextlib.closing(open_application(Settings(database_url=database))) as app:
        listed = app.list_scopes(ListScopesParameters())
    assert [s.scope_id for s in listed.scopes] == ["project:hostile", "project:other"]


def test_a_line_longer_than_any_the_contract_allows_is_refused_before_it_is_read_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    header, scope, *rows = exported_seed(tmp_path).read_bytes().splitlines(keepends=True)
    long = tmp_path / "long.jsonl"
    huge = b'{"type":"counter","name":"' + b"x" * (40 << 20) + b'"}\n'
    long.write_bytes(header + scope + huge + b"".join(rows))
    target = f"sqlite:///{tmp_path / 'target.sqlite3'}"
    capsys.readouterr()
    tracemalloc.start()
    try:
        assert server_main(["import", str(long), "--database-url", target]) == 2
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "Line 3 is longer than 1048576 bytes" in capsys.readouterr().err
    assert peak < 8 << 20  # a few MiB, never the 40 MiB line
