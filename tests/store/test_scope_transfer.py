"""`powercontext export` / `powercontext import`: one Scope moved between databases, SQLite ⇄ OceanBase.

What a user relies on: the imported Scope answers every read exactly as the original (prepare,
legacy and assembled, byte for byte; every old citation and revision; lists and searches), keeps
counting where the original stopped, and a refused or failed import leaves the target exactly as it
was. Internal keys differ between the databases on purpose: each holds other Scopes first.
"""

from __future__ import annotations

import io
import json
import random
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from powercontext_api.models import (
    CandidateDecisionRequest,
    CandidateGetRequest,
    DeleteScopeParameters,
    EntryCitationRequest,
    EntryEraseRequest,
    GetArtifactRevisionParameters,
    GetScopeParameters,
    ListCandidatesRequest,
    ListEntriesRequest,
    MemorySearchRequest,
    PrepareContextRequest,
    ProfileGetRequest,
    ProposeExperienceRequest,
    ProposeProfileRequest,
    PutTopicRequest,
    RememberBatchRequest,
    RememberRequest,
    ReviseEntryRequest,
    ScopeCreateRequest,
    SearchRequest,
)
from powercontext_runtime import (
    PowerContextError,
    ScopedContextApplication,
    Settings,
    backend_for,
    open_application,
)
from powercontext_runtime.store import scope_export, scope_transfer
from powercontext_runtime.store.copy import TABLES
from powercontext_runtime.store.scope_export import export_scope
from powercontext_runtime.store.scope_transfer import TransferFailed, TransferRefused, import_scope
from powercontext_server.cli import main as server_main

from ..conftest import LiveServer
from .faults import FailingBackend
from .test_backend_parity import ASSEMBLIES, sentence

SCOPE = "project:x"
REFERENCED = "team:ref"
QUERIES = [
    "deploy gateway",
    "记忆 系统",
    "测试",
    "café naïve",
    "exact tie words",
    "schema contract api",
    "absent",
]


@contextmanager
def opened(url: str) -> Iterator[ScopedContextApplication]:
    app = open_application(Settings(database_url=url, assembly_max_entries=8))
    try:
        yield app
    finally:
        app.close()


# Building and observing a Scope -------------------------------------------------------------------


@dataclass
class Seeded:
    """Every public identity the build handed out: citations of every version, artifact revisions."""

    citations: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (Scope id, citation)
    artifacts: list[tuple[str, str, int]] = field(default_factory=list)
    candidates: list[str] = field(default_factory=list)


def other_scope(app: ScopedContextApplication, scope_id: str, entries: int) -> None:
    """Rows of another Scope, written first, so the seeded Scope's keys differ per database."""
    app.create_scope(ScopeCreateRequest.model_validate({"scope_id": scope_id}))
    texts = [{"text": f"other {i} deploy gateway 记忆"} for i in range(entries)]
    app.remember_batch(
        RememberBatchRequest.model_validate({"scope_id": scope_id, "entries": texts, "deduplicate": False})
    )
    fields = {k: f"other {k}" for k in ("situation", "action", "outcome", "lesson")}
    for _ in range(entries % 4 + 1):
        proposed = app.propose_experience(
            ProposeExperienceRequest.model_validate({"scope_id": scope_id, **fields})
        )
        decide(app, scope_id, proposed.candidate_id, approve=True)
        app.put_topic(
            PutTopicRequest.model_validate(
                {"scope_id": scope_id, "title": "t", "summary": "s", "detail": "d"}
            )
        )


def decide(app: ScopedContextApplication, scope_id: str, candidate_id: str, approve: bool) -> Any:
    request = CandidateDecisionRequest.model_validate(
        {"scope_id": scope_id, "candidate_id": candidate_id, "expected_version": 1}
    )
    return app.approve_candidate(request) if approve else app.reject_candidate(request)


def remember(app: ScopedContextApplication, scope_id: str, text: str, kind: str = "note") -> dict[str, Any]:
    # Seeds repeat texts on purpose: a move keeps every entry, duplicates included.
    body = {"scope_id": scope_id, "text": text, "kind": kind, "deduplicate": False}
    entry = app.remember(RememberRequest.model_validate(body))
    return entry.citation.model_dump(mode="json")


def build(app: ScopedContextApplication) -> Seeded:
    """The referenced Scope, then SCOPE with every family: revised, retired and erased entries, CJK
    text, ties, Experience and Profile revisions, Candidates in every state, revised Topics."""
    seeded = Seeded()
    app.create_scope(ScopeCreateRequest.model_validate({"scope_id": REFERENCED, "title": "Team"}))
    for text in ("deploy gateway 部署 from the team", "team 记忆 系统 note", "exact tie words"):
        seeded.citations.append((REFERENCED, remember(app, REFERENCED, text)))
    app.create_scope(
        ScopeCreateRequest.model_validate(
            {
                "scope_id": SCOPE,
                "title": "项目 X",
                "summary": "Every family, «quoted» and 😀",
                "context_references": [REFERENCED],
            }
        )
    )
    texts = [
        "deploy gateway through the canary 部署",
        "记忆系统 keeps citations stable",
        "测试 before every deploy",
        "café naïve schema contract",
        "exact tie words",
        "exact tie words",
        "api contract change needs review",
        "a secret to erase for good",
        "line one\nline two\ttabbed \u2028 separator",
        "😀 emoji 记忆 stays intact",
    ]
    cited = [remember(app, SCOPE, text, kind="fact" if i % 3 else "note") for i, text in enumerate(texts)]
    seeded.citations += [(SCOPE, citation) for citation in cited]

    def revise(citation: dict[str, Any], text: str) -> dict[str, Any]:
        request = ReviseEntryRequest.model_validate({"scope_id": SCOPE, "citation": citation, "text": text})
        revised = app.revise_memory_entry(request).citation.model_dump(mode="json")
        seeded.citations.append((SCOPE, revised))
        return revised

    def retire(citation: dict[str, Any]) -> None:
        request = EntryCitationRequest.model_validate({"scope_id": SCOPE, "citation": citation})
        seeded.citations.append((SCOPE, app.retire_memory_entry(request).citation.model_dump(mode="json")))

    second = revise(cited[0], "deploy gateway v2 部署 canary")
    revise(second, "deploy gateway v3 部署 blue green")
    retire(cited[2])
    retire(revise(cited[6], "api contract change reviewed"))
    app.erase_memory_entry(
        EntryEraseRequest.model_validate({"scope_id": SCOPE, "entry_id": cited[7]["entry_id"]})
    )
    batch = [{"text": f"batch {i} {QUERIES[i % len(QUERIES)]}", "kind": "batch"} for i in range(30)]
    result = app.remember_batch(
        RememberBatchRequest.model_validate({"scope_id": SCOPE, "entries": batch, "deduplicate": False})
    )
    seeded.citations += [(SCOPE, c.model_dump(mode="json")) for c in result.citations]

    def experience(text: str, target: str | None = None) -> str:
        body = {k: f"{text} {k}" for k in ("situation", "action", "outcome", "lesson")}
        if target is not None:
            body["artifact_id"] = target
        candidate = app.propose_experience(
            ProposeExperienceRequest.model_validate({"scope_id": SCOPE, **body})
        )
        seeded.candidates.append(candidate.candidate_id)
        return candidate.candidate_id

    def profile(text: str) -> str:
        candidate = app.propose_profile(
            ProposeProfileRequest.model_validate({"scope_id": SCOPE, "content": text})
        )
        seeded.candidates.append(candidate.candidate_id)
        return candidate.candidate_id

    for text in ("deploy gateway rollback", "测试 记忆 系统", "café schema"):
        decide(app, SCOPE, experience(text), approve=True)
    decide(app, SCOPE, experience("exact tie words", target="experience-1"), approve=True)  # revision 2
    decide(app, SCOPE, experience("rejected idea"), approve=False)
    experience("pending idea deploy")
    decide(app, SCOPE, profile("Prefers 简体中文 answers."), approve=True)
    decide(app, SCOPE, profile("Prefers short answers; 简体中文."), approve=True)
    profile("A pending profile.")
    for title in ("Gateway 部署", "Schema contract"):
        app.put_topic(
            PutTopicRequest.model_validate(
                {
                    "scope_id": SCOPE,
                    "title": title,
                    "summary": f"{title} summary",
                    "detail": f"{title} 记忆 detail",
                }
            )
        )
    app.put_topic(
        PutTopicRequest.model_validate(
            {
                "scope_id": SCOPE,
                "artifact_id": "topic-1",
                "expected_revision": 1,
                "title": "Gateway 部署 v2",
                "summary": "revised",
                "detail": "deploy gateway canary",
            }
        )
    )
    seeded.artifacts = [
        ("experience", "experience-1", 1),
        ("experience", "experience-1", 2),
        ("experience", "experience-2", 1),
        ("experience", "experience-3", 1),
        ("profile", "profile", 1),
        ("profile", "profile", 2),
        ("topic-memory", "topic-1", 1),
        ("topic-memory", "topic-1", 2),
        ("topic-memory", "topic-2", 1),
        ("experience", "experience-4", 1),  # never committed: not found on either side
    ]
    return seeded


def answer(call: Any, request: Any) -> object:
    try:
        return call(request).model_dump(mode="json")
    except PowerContextError as exc:
        return type(exc).__name__


def observe(app: ScopedContextApplication, seeded: Seeded) -> list[object]:
    """Every read a caller can make of SCOPE (and its citations into REFERENCED)."""
    seen: list[object] = [answer(app.get_scope, GetScopeParameters.model_validate({"scope_id": SCOPE}))]
    for query in QUERIES:
        for assembly in ASSEMBLIES:
            for max_bytes in (600, 4000, 32768):
                request: dict[str, Any] = {"scope_id": SCOPE, "query": query, "max_bytes": max_bytes}
                if assembly is not None:
                    request["assembly"] = assembly
                seen.append(answer(app.prepare_context, PrepareContextRequest.model_validate(request)))
        search = {"scope_id": SCOPE, "query": query, "limit": 50}
        seen.append(answer(app.search_memory, MemorySearchRequest.model_validate(search)))
        seen.append(answer(app.search_experience, SearchRequest.model_validate(search)))
        seen.append(answer(app.search_topics, SearchRequest.model_validate(search)))
    for scope_id, citation in seeded.citations:
        cited = EntryCitationRequest.model_validate({"scope_id": scope_id, "citation": citation})
        seen.append(answer(app.get_memory_entry, cited))
    head = app.get_scope(GetScopeParameters.model_validate({"scope_id": SCOPE}))
    memory_revisions = [("memory", "memory", r) for r in range(1, 60)]
    for family, artifact_id, revision in [*seeded.artifacts, *memory_revisions]:
        parameters = {"scope_id": SCOPE, "family": family, "artifact_id": artifact_id, "revision": revision}
        seen.append(
            answer(app.get_artifact_revision, GetArtifactRevisionParameters.model_validate(parameters))
        )
    cursor: str | None = None
    while True:  # every page of the list, seven entries a page
        page = {"scope_id": SCOPE, "limit": 7, **({"cursor": cursor} if cursor else {})}
        listed = app.list_memory_entries(ListEntriesRequest.model_validate(page))
        seen.append(listed.model_dump(mode="json"))
        cursor = listed.next_cursor
        if not cursor:
            break
    for state in (None, "pending", "approved", "rejected"):
        request = {"scope_id": SCOPE, **({"state": state} if state else {})}
        seen.append(answer(app.list_candidates, ListCandidatesRequest.model_validate(request)))
    for candidate_id in seeded.candidates:
        request = {"scope_id": SCOPE, "candidate_id": candidate_id}
        seen.append(answer(app.get_candidate, CandidateGetRequest.model_validate(request)))
    seen.append(answer(app.get_profile, ProfileGetRequest.model_validate({"scope_id": SCOPE})))
    seen.append(head.model_dump(mode="json"))
    return seen


def export_to(url: str, scope_id: str, path: Path) -> Path:
    with path.open("wb") as file:
        export_scope(backend_for(url), scope_id, file.write)
    return path


def import_from(url: str, path: Path) -> scope_transfer.TransferReport:
    with path.open("rb") as file:
        return import_scope(backend_for(url), file)


def table_rows(url: str) -> dict[str, list[tuple[Any, ...]]]:
    backend = backend_for(url)
    conn = backend.connect()
    try:
        return {
            t: sorted((tuple(r) for r in conn.execute(f"SELECT * FROM {t}").fetchall()), key=repr)
            for t in TABLES
        }
    finally:
        backend.close(conn)


def version_keys(url: str, scope_id: str) -> list[int]:
    backend = backend_for(url)
    conn = backend.connect()
    try:
        return [
            int(row[0])
            for row in conn.execute(
                "SELECT v.version_key FROM memory_entry_versions v JOIN scopes s ON s.scope_key = v.scope_key"
                " WHERE s.scope_id = ? ORDER BY v.version_key",
                (scope_id,),
            ).fetchall()
        ]
    finally:
        backend.close(conn)


def scope_key(url: str, scope_id: str) -> int:
    backend = backend_for(url)
    conn = backend.connect()
    try:
        return int(conn.execute("SELECT scope_key FROM scopes WHERE scope_id = ?", (scope_id,)).fetchone()[0])
    finally:
        backend.close(conn)


def body_lines(path: Path) -> list[bytes]:
    """The export's lines but its header (which carries the time of the export)."""
    return path.read_bytes().splitlines()[1:]


# The imported Scope answers as the original -------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "target"),
    [
        ("sqlite-a", "sqlite-b"),
        ("sqlite-a", "oceanbase-b"),
        ("oceanbase-a", "sqlite-b"),
        ("oceanbase-a", "oceanbase-b"),
    ],
)
def test_an_imported_scope_answers_every_read_exactly_as_the_original(
    urls: dict[str, str], tmp_path: Path, source: str, target: str
) -> None:
    with opened(urls[source]) as app:
        other_scope(app, "other:source", 37)
        seeded = build(app)
        before = observe(app, seeded)
    with opened(urls[target]) as app:
        other_scope(app, "other:target", 5)

    for scope_id in (REFERENCED, SCOPE):
        exported = export_to(urls[source], scope_id, tmp_path / f"{scope_id}.jsonl")
        report = import_from(urls[target], exported)
        assert report.scope_id == scope_id and report.indexed > 0
    assert report.rows["memory_erasure"] == 1 and report.rows["candidate"] == 9

    with opened(urls[target]) as app:
        assert observe(app, seeded) == before
    # New internal keys, in the same order; the public ids and numbers are the original's.
    old_keys, new_keys = version_keys(urls[source], SCOPE), version_keys(urls[target], SCOPE)
    assert old_keys != new_keys and len(old_keys) == len(new_keys)
    # Exported again, the imported Scope gives the very same lines.
    again = export_to(urls[target], SCOPE, tmp_path / "again.jsonl")
    assert body_lines(again) == body_lines(tmp_path / f"{SCOPE}.jsonl")

    # Both go on counting where the original stopped, and answer alike afterwards too.
    after = []
    for url in (urls[source], urls[target]):
        with opened(url) as app:
            entry = remember(app, SCOPE, "zebra crossing 部署")
            candidate = app.propose_experience(
                ProposeExperienceRequest.model_validate(
                    {"scope_id": SCOPE, "situation": "zebra", "action": "a", "outcome": "o", "lesson": "l"}
                )
            )
            decide(app, SCOPE, candidate.candidate_id, approve=True)
            topic = app.put_topic(
                PutTopicRequest.model_validate(
                    {"scope_id": SCOPE, "title": "zebra", "summary": "s", "detail": "d"}
                )
            )
            prepared = app.prepare_context(
                PrepareContextRequest.model_validate({"scope_id": SCOPE, "query": "zebra 部署"})
            )
            after.append((entry, candidate.candidate_id, topic.artifact.artifact_id, prepared.content))
    assert after[0] == after[1]
    assert after[0][:3] == (
        {"memory_ref": {"family": "memory", "artifact_id": "memory", "revision": 47}, "entry_id": "entry-41",
         "entry_version_id": "entry-41-v1"},
        "candidate-10",
        "topic-3",
    )  # fmt: skip


def test_http_answers_are_the_same_bytes_after_a_move_from_sqlite_to_oceanbase(
    urls: dict[str, str], tmp_path: Path
) -> None:
    with opened(urls["sqlite-a"]) as app:
        seeded = build(app)
    for scope_id in (REFERENCED, SCOPE):
        import_from(
            urls["oceanbase-b"], export_to(urls["sqlite-a"], scope_id, tmp_path / f"{scope_id}.jsonl")
        )

    requests: list[tuple[str, str, dict[str, Any] | None]] = []
    for query in QUERIES[:4]:
        for assembly in ASSEMBLIES:
            body: dict[str, Any] = {"scope_id": SCOPE, "query": query, "max_bytes": 4000}
            if assembly is not None:
                body["assembly"] = assembly
            requests.append(("POST", "/v1/context/prepare", body))
    for scope_id, citation in seeded.citations:
        requests.append(("POST", "/v1/memory/entries/get", {"scope_id": scope_id, "citation": citation}))
    for family, artifact_id, revision in [
        *seeded.artifacts,
        ("memory", "memory", 1),
        ("memory", "memory", 20),
    ]:
        requests.append(
            ("GET", f"/v1/scopes/{SCOPE}/artifacts/{family}/{artifact_id}/revisions/{revision}", None)
        )

    answers = []
    for url in (urls["sqlite-a"], urls["oceanbase-b"]):
        server = LiveServer(Settings(database_url=url))
        server.start()
        try:
            with httpx.Client(base_url=server.base_url, timeout=30.0) as client:
                answers.append(
                    [
                        (r.status_code, r.content)
                        for r in (client.request(m, p, json=b) for m, p, b in requests)
                    ]
                )
        finally:
            server.stop()
    assert answers[0] == answers[1]
    assert {status for status, _ in answers[0]} == {200, 404, 410}  # found, never committed, erased


def test_a_running_server_finds_a_scope_imported_under_the_key_of_a_deleted_one(
    urls: dict[str, str], tmp_path: Path
) -> None:
    """SQLite hands a deleted Scope's key to the next one: the import must advance the search
    generations past the deleted Scope's, or a server's in-memory index would serve the old one."""
    with opened(urls["sqlite-a"]) as app:
        seeded = build(app)
        before = observe(app, seeded)
    files = {s: export_to(urls["sqlite-a"], s, tmp_path / f"{s}.jsonl") for s in (REFERENCED, SCOPE)}
    import_from(urls["sqlite-b"], files[REFERENCED])
    with opened(urls["sqlite-b"]) as server:  # stays open: a running server
        server.create_scope(ScopeCreateRequest.model_validate({"scope_id": SCOPE}))
        for i in range(40):
            remember(server, SCOPE, f"deploy gateway 记忆 测试 café exact tie words schema {i}")
        for query in QUERIES:  # the mirror now holds the deleted Scope's index
            server.search_memory(MemorySearchRequest.model_validate({"scope_id": SCOPE, "query": query}))
        old_key = scope_key(urls["sqlite-b"], SCOPE)
        server.delete_scope(DeleteScopeParameters.model_validate({"scope_id": SCOPE}))
        import_from(urls["sqlite-b"], files[SCOPE])
        assert scope_key(urls["sqlite-b"], SCOPE) == old_key
        assert observe(server, seeded) == before


@pytest.mark.parametrize("database", ["sqlite-a", "oceanbase-a"])
def test_export_delete_import_on_a_running_server_answers_byte_for_byte_as_before(
    urls: dict[str, str], tmp_path: Path, database: str
) -> None:
    """Issue #15: export, DELETE the Scope, import the file into the same database; every prepare,
    search and exact read of the still-running application is the same as before."""
    with opened(urls[database]) as app:
        seeded = build(app)
        before = observe(app, seeded)
        exported = export_to(urls[database], SCOPE, tmp_path / "scope.jsonl")
        app.delete_scope(DeleteScopeParameters.model_validate({"scope_id": SCOPE}))
        assert (
            answer(app.get_scope, GetScopeParameters.model_validate({"scope_id": SCOPE})) == "ScopeNotFound"
        )
        import_from(urls[database], exported)
        assert observe(app, seeded) == before


# Refusals and failures leave the target as it was -------------------------------------------------


@pytest.mark.parametrize("target", ["sqlite-b", "oceanbase-b"])
def test_a_scope_id_in_use_is_refused_with_exit_2_and_the_target_unchanged(
    urls: dict[str, str], tmp_path: Path, target: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with opened(urls["sqlite-a"]) as app:
        build(app)
    for scope_id in (REFERENCED, SCOPE):
        path = str(tmp_path / f"{scope_id}.jsonl")
        assert server_main(["export", scope_id, "--output", path, "--database-url", urls["sqlite-a"]]) == 0
    assert server_main(["import", str(tmp_path / f"{REFERENCED}.jsonl"), "--database-url", urls[target]]) == 0
    with opened(urls[target]) as app:
        app.create_scope(ScopeCreateRequest.model_validate({"scope_id": SCOPE}))
        remember(app, SCOPE, "already here")
    before = table_rows(urls[target])
    capsys.readouterr()

    assert server_main(["import", str(tmp_path / f"{SCOPE}.jsonl"), "--database-url", urls[target]]) == 2
    assert "already has a Scope 'project:x'" in capsys.readouterr().err
    assert table_rows(urls[target]) == before


@pytest.mark.parametrize("target", ["sqlite-b", "oceanbase-b"])
def test_a_truncated_file_is_refused_after_rows_were_inserted_and_nothing_stays(
    urls: dict[str, str], tmp_path: Path, target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scope_transfer, "BATCH_ROWS", 7)  # many batches are inserted before the end
    with opened(urls["sqlite-a"]) as app:
        build(app)
    with opened(urls[target]) as app:
        other_scope(app, "other:target", 3)
    whole = export_to(urls["sqlite-a"], REFERENCED, tmp_path / "ref.jsonl")
    import_from(urls[target], whole)
    whole = export_to(urls["sqlite-a"], SCOPE, tmp_path / "whole.jsonl")
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(b"\n".join(whole.read_bytes().splitlines()[:-3]) + b"\n")
    before = table_rows(urls[target])

    with pytest.raises(TransferRefused, match=r"candidate 6 of 9.*incomplete"):
        import_from(urls[target], cut)
    assert table_rows(urls[target]) == before


def test_a_database_failure_while_indexing_leaves_the_target_as_it_was(
    urls: dict[str, str], tmp_path: Path
) -> None:
    with opened(urls["sqlite-a"]) as app:
        build(app)
    import_from(urls["sqlite-b"], export_to(urls["sqlite-a"], REFERENCED, tmp_path / "ref.jsonl"))
    before = table_rows(urls["sqlite-b"])
    failing = FailingBackend(backend_for(urls["sqlite-b"]), "search_segments")  # the last step
    exported = export_to(urls["sqlite-a"], SCOPE, tmp_path / "x.jsonl")
    with exported.open("rb") as file, pytest.raises(TransferFailed, match="disk is full"):
        import_scope(failing, file)  # type: ignore[arg-type]
    assert table_rows(urls["sqlite-b"]) == before


def test_refusals_exit_2_with_a_clear_message(
    urls: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with opened(urls["sqlite-a"]) as app:
        build(app)
    good = export_to(urls["sqlite-a"], SCOPE, tmp_path / "good.jsonl")
    header, *rest = good.read_bytes().splitlines(keepends=True)
    newer = tmp_path / "newer.jsonl"
    newer.write_bytes(json.dumps({**json.loads(header), "version": 2}).encode() + b"\n" + b"".join(rest))
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(bytes(range(256)) * 4)
    other_json = tmp_path / "other.jsonl"
    other_json.write_text('{"hello": "world"}\n')
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    unknown_type = tmp_path / "unknown.jsonl"
    unknown_type.write_bytes(header + rest[0] + b'{"type": "hologram", "x": 1}\n')
    bad_field = tmp_path / "bad-field.jsonl"
    bad_field.write_bytes(header + rest[0] + b'{"type":"counter","name":"candidate","value":"9"}\n')
    target = urls["sqlite-b"]
    target_file = Path(target.removeprefix("sqlite:///"))

    cases = [
        (["import", str(newer)], "format version 2; this release reads version 1 only"),
        (["import", str(garbage)], "not a PowerContext Scope export"),
        (["import", str(other_json)], "not a PowerContext Scope export"),
        (["import", str(empty)], "empty, not a PowerContext Scope export"),
        (["import", str(tmp_path / "absent.jsonl")], "cannot read"),
    ]
    for argv, message in cases:
        assert server_main([*argv, "--database-url", target]) == 2, argv
        assert message in capsys.readouterr().err, argv
    assert not target_file.exists()  # a file that is no export never touches the database

    assert server_main(["import", str(good), "--database-url", target]) == 2
    assert "references Scopes the target lacks: team:ref. Import them first" in capsys.readouterr().err
    assert all(rows == [] for rows in table_rows(target).values())
    import_from(target, export_to(urls["sqlite-a"], REFERENCED, tmp_path / "ref.jsonl"))
    before = table_rows(target)
    for path, message in (
        (unknown_type, 'Line 3 has an unknown type "hologram"'),
        (bad_field, "Line 3 (counter) is outside the contract: value: Input should be a valid integer."),
    ):
        assert server_main(["import", str(path), "--database-url", target]) == 2, path
        assert message in capsys.readouterr().err, path
        assert table_rows(target) == before

    absent = tmp_path / "absent-out.jsonl"
    assert server_main(["export", "no:such", "-o", str(absent), "--database-url", urls["sqlite-a"]]) == 2
    assert "There is no Scope 'no:such' in this database." in capsys.readouterr().err
    assert not absent.exists() and not list(tmp_path.glob(".absent-out*"))
    nowhere = tmp_path / "nowhere"
    assert server_main(["export", SCOPE, "-o", str(absent), "--data-dir", str(nowhere)]) == 2
    assert "There is no database at" in capsys.readouterr().err
    assert not nowhere.exists()


def test_export_to_stdout_and_import_from_stdin(
    urls: dict[str, str],
    tmp_path: Path,
    capsysbinary: pytest.CaptureFixture[bytes],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with opened(urls["sqlite-a"]) as app:
        build(app)
    import_from(urls["sqlite-b"], export_to(urls["sqlite-a"], REFERENCED, tmp_path / "ref.jsonl"))
    assert server_main(["export", SCOPE, "--output", "-", "--database-url", urls["sqlite-a"]]) == 0
    captured = capsysbinary.readouterr()
    assert captured.out.startswith(b'{"format":"powercontext.scope-export","version":1,')
    assert captured.err.startswith(b"exported Scope project:x: ")  # the summary keeps off stdout

    class Stdin:
        buffer = io.BytesIO(captured.out)

    monkeypatch.setattr("sys.stdin", Stdin)
    assert server_main(["import", "-", "--database-url", urls["sqlite-b"]]) == 0
    out = capsysbinary.readouterr()
    assert out.out.startswith(b"imported Scope project:x: ") and out.err == b""  # no bar off a terminal


def test_memory_stays_flat_however_large_the_scope(
    urls: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Export and import hold a batch at a time: eight times the entries, the same peak (batches
    made small so that a few thousand entries span many of them)."""
    monkeypatch.setattr(scope_transfer, "BATCH_ROWS", 50)
    monkeypatch.setattr(scope_export, "BATCH_ROWS", 50)
    monkeypatch.setattr(scope_transfer, "INDEX_BATCH", 25)
    sizes = {"small": 200, "large": 1600}
    rng = random.Random(7)  # words of a small vocabulary: no cache of the tokenizer grows either
    with opened(urls["sqlite-a"]) as app:
        for scope_id, entries in sizes.items():
            app.create_scope(ScopeCreateRequest.model_validate({"scope_id": scope_id}))
            for _ in range(0, entries, 200):
                texts = [{"text": sentence(rng)} for _ in range(200)]
                app.remember_batch(
                    RememberBatchRequest.model_validate(
                        {"scope_id": scope_id, "entries": texts, "deduplicate": False}
                    )
                )

    peaks: dict[str, tuple[int, int, int]] = {}
    for scope_id in sizes:
        path = tmp_path / f"{scope_id}.jsonl"
        tracemalloc.start()
        try:
            export_to(urls["sqlite-a"], scope_id, path)
            export_peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.reset_peak()
            assert import_from(urls["sqlite-b"], path).indexed == sizes[scope_id]
            import_peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        peaks[scope_id] = (export_peak, import_peak, path.stat().st_size)
    (small_export, small_import, small_size), (large_export, large_import, large_size) = peaks.values()
    assert large_size > 7 * small_size
    assert large_export < 1.1 * small_export + 20_000 and large_export < large_size / 8, peaks
    assert large_import < 1.1 * small_import + 20_000 and large_import < large_size / 8, peaks
