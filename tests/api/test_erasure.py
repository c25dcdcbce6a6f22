"""Erasure (issue #15): an erased entry or Scope leaves no byte of its text in the database files,
exact reads of erased citations are 410, and search and prepare never show it again."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from powercontext_runtime import token_digest
from powercontext_runtime.search import _limits

from .helpers import experience, new_scope, profile, remember, topic


def planted() -> str:
    """A word found nowhere else, that stemming and case folding leave as it is."""
    return f"zqxmarker{uuid.uuid4().hex[:12]}"


def data_files(server: Any) -> list[Path]:
    directory = Path(server.application.settings.database_url.removeprefix("sqlite:///")).parent
    return sorted(path for path in directory.iterdir() if path.is_file())


def files_holding(server: Any, *markers: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in data_files(server):
        content = path.read_bytes()
        hits = [marker for marker in markers if marker.encode() in content]
        if hits:
            found[path.name] = hits
    return found


def erase(http: httpx.Client, scope_id: str, entry_id: str) -> httpx.Response:
    return http.post("/v1/memory/entries/erase", json={"scope_id": scope_id, "entry_id": entry_id})


def get_entry(http: httpx.Client, scope_id: str, citation: dict[str, Any]) -> httpx.Response:
    return http.post("/v1/memory/entries/get", json={"scope_id": scope_id, "citation": citation})


GONE = {"error": {"code": "entry_erased", "message": "The cited entry was erased.", "details": None}}


def test_an_erased_entry_is_gone_from_every_read_and_every_file(start_server: Any, backend: str) -> None:
    server = start_server()
    first, second, kept = planted(), planted(), planted()
    with httpx.Client(base_url=server.base_url, timeout=30) as http:
        scope_id = new_scope(http)
        original = remember(http, scope_id, f"the locker code is {first}")["citation"]
        revised = http.post(
            "/v1/memory/entries/revise",
            json={"scope_id": scope_id, "citation": original, "text": f"the locker code is {second}"},
        ).json()["citation"]
        other = remember(http, scope_id, f"the locker room is {kept}")["citation"]
        if backend == "sqlite":
            assert files_holding(server, first, second)  # the check can see a planted text
        done = erase(http, scope_id, "entry-1")
        assert done.status_code == 200, done.text
        assert done.json() == {
            "scope_id": scope_id,
            "entry_id": "entry-1",
            "versions": 2,
            "memory_revision": 4,
        }
        for citation in (original, revised):
            gone = get_entry(http, scope_id, citation)
            assert (gone.status_code, gone.json()) == (410, GONE)
        assert erase(http, scope_id, "entry-1").status_code == 410
        assert erase(http, scope_id, "entry-9").status_code == 404
        stale = http.post(
            "/v1/memory/entries/revise", json={"scope_id": scope_id, "citation": revised, "text": "x"}
        )
        assert stale.status_code == 410
        for query in (first, second, "locker code"):
            hits = http.post("/v1/memory/search", json={"scope_id": scope_id, "query": query}).json()["hits"]
            assert [hit["citation"]["entry_id"] for hit in hits] == (
                [] if query != "locker code" else ["entry-2"]
            )
            for body in ({}, {"assembly": {}}):
                prepared = http.post(
                    "/v1/context/prepare", json={"scope_id": scope_id, "query": f"locker {query}", **body}
                ).json()
                assert first not in (prepared["content"] or "") and second not in (prepared["content"] or "")
        listed = http.post("/v1/memory/entries/list", json={"scope_id": scope_id}).json()["entries"]
        assert [entry["citation"]["entry_id"] for entry in listed] == ["entry-2"]
        assert get_entry(http, scope_id, other).json()["text"] == f"the locker room is {kept}"
        # The Memory as of a revision before the erasure no longer holds it either.
        old = http.get(f"/v1/scopes/{scope_id}/artifacts/memory/memory/revisions/2").json()
        assert first not in str(old) and second not in str(old)
    if backend == "sqlite":
        assert files_holding(server, first, second) == {}
        assert files_holding(server, kept)  # the rest is still there


@pytest.mark.parametrize("path", ["direct", "deferred", "merged"])
def test_an_entry_erased_from_a_batch_leaves_its_neighbours_whole(
    start_server: Any, backend: str, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch is indexed and logged as one write; erasing one of its entries takes that entry's
    words out of both, and the others stay found. Deferred: the batch's postings are still only in
    its log row, waiting to be merged; merged: they are in a run already."""
    if path != "direct":
        monkeypatch.setattr(_limits, "DEFER_DOCUMENTS", 2)
    if path == "merged":
        monkeypatch.setattr(_limits, "MERGE_DOCUMENTS", 2)
    server = start_server()
    markers = [planted() for _ in range(4)]
    with httpx.Client(base_url=server.base_url, timeout=30) as http:
        scope_id = new_scope(http)
        prepare_once = http.post("/v1/context/prepare", json={"scope_id": scope_id, "query": "locker"})
        assert prepare_once.status_code == 200  # a mirror exists and replays the batch below
        added = http.post(
            "/v1/memory/remember/batch",
            json={"scope_id": scope_id, "entries": [{"text": f"locker {m} shared words"} for m in markers]},
        )
        assert added.status_code == 200, added.text
        if backend == "sqlite":
            assert set().union(*files_holding(server, *markers).values()) == set(markers)
        assert erase(http, scope_id, "entry-2").status_code == 200
        for index, marker in enumerate(markers):
            hits = http.post("/v1/memory/search", json={"scope_id": scope_id, "query": marker}).json()["hits"]
            assert [hit["citation"]["entry_id"] for hit in hits] == (
                [] if index == 1 else [f"entry-{index + 1}"]
            )
        shared = http.post("/v1/memory/search", json={"scope_id": scope_id, "query": "shared locker"}).json()
        assert sorted(hit["citation"]["entry_id"] for hit in shared["hits"]) == [
            "entry-1",
            "entry-3",
            "entry-4",
        ]
    if backend == "sqlite":
        assert files_holding(server, markers[1]) == {}
        assert files_holding(server, markers[0], markers[2], markers[3])


def test_an_erased_scope_leaves_nothing_and_its_id_starts_afresh(start_server: Any, backend: str) -> None:
    server = start_server()
    marks = {
        family: planted() for family in ("memory", "revised", "experience", "profile", "topic", "pending")
    }
    with httpx.Client(base_url=server.base_url, timeout=30) as http:
        keeper = new_scope(http)
        remember(http, keeper, "a neighbour that stays")
        scope_id = new_scope(http)
        entry = remember(http, scope_id, f"memory {marks['memory']}")["citation"]
        http.post(
            "/v1/memory/entries/revise",
            json={"scope_id": scope_id, "citation": entry, "text": f"memory {marks['revised']}"},
        )
        experience(http, scope_id, "situation", f"action {marks['experience']}", "outcome", "lesson")
        profile(http, scope_id, f"profile {marks['profile']}")
        profile(http, scope_id, f"pending {marks['pending']}", approve=False)
        topic(http, scope_id, "title", f"summary {marks['topic']}")
        referrer = new_scope(http, context_references=[scope_id])
        refused = http.delete(f"/v1/scopes/{scope_id}")
        assert refused.status_code == 409
        assert refused.json()["error"]["code"] == "scope_referenced"
        assert http.get(f"/v1/scopes/{scope_id}").status_code == 200  # nothing was erased
        version = http.get(f"/v1/scopes/{referrer}").json()["version"]
        assert (
            http.put(
                f"/v1/scopes/{referrer}", json={"expected_version": version, "context_references": []}
            ).status_code
            == 200
        )
        done = http.delete(f"/v1/scopes/{scope_id}")
        assert (done.status_code, done.json()) == (200, {"scope_id": scope_id})
        assert http.get(f"/v1/scopes/{scope_id}").status_code == 404
        assert http.delete(f"/v1/scopes/{scope_id}").status_code == 404
        assert get_entry(http, scope_id, entry).status_code == 404
        # The same id starts empty, and its search answers from its own entries only.
        assert http.post("/v1/scopes", json={"scope_id": scope_id}).status_code == 201
        assert (
            http.post("/v1/memory/search", json={"scope_id": scope_id, "query": "memory"}).json()["hits"]
            == []
        )
        remember(http, scope_id, "memory anew")
        hits = http.post("/v1/memory/search", json={"scope_id": scope_id, "query": "memory"}).json()["hits"]
        assert [hit["text"] for hit in hits] == ["memory anew"]
        assert remember(http, keeper, "still here")["citation"]["entry_id"] == "entry-2"
    if backend == "sqlite":
        assert files_holding(server, *marks.values()) == {}


def test_erasing_needs_the_scope_erase_action(start_server: Any, tmp_path: Path) -> None:
    tokens = {"writer": "token-writer-secret", "eraser": "token-eraser-secret"}
    grants = {
        "writer": '["scope.read", "scope.write", "scope.review", "server.admin"]',
        "eraser": '["scope.erase"]',
    }
    auth = tmp_path / "auth.toml"
    auth.write_text(
        "".join(
            f'[[principal]]\nname = "{name}"\ntoken_sha256 = "{token_digest(tokens[name])}"\n'
            f'grants = [{{ actions = {grants[name]}, scopes = ["*"] }}]\n\n'
            for name in tokens
        ),
        encoding="utf-8",
    )
    server = start_server(POWERCONTEXT_SERVER_AUTH_FILE=str(auth))

    def client(name: str) -> httpx.Client:
        return httpx.Client(base_url=server.base_url, headers={"Authorization": f"Bearer {tokens[name]}"})

    with client("writer") as writer, client("eraser") as eraser:
        scope_id = new_scope(writer)
        remember(writer, scope_id, "to be erased")
        for http, status in ((writer, 403), (eraser, 200)):
            assert erase(http, scope_id, "entry-1").status_code == status
        for http, status in ((writer, 403), (eraser, 200)):
            assert http.delete(f"/v1/scopes/{scope_id}").status_code == status


@pytest.mark.parametrize("backend", ["sqlite"])
def test_a_mirror_of_an_erased_scope_never_answers_for_a_new_scope_on_its_key(start_server: Any) -> None:
    """SQLite hands the highest key out again once its row is gone: the new Scope's search must
    not be answered from the erased one's in-memory index."""
    server = start_server()
    with httpx.Client(base_url=server.base_url, timeout=30) as http:
        for round_ in range(3):
            scope_id = "project:reused"
            assert http.post("/v1/scopes", json={"scope_id": scope_id}).status_code == 201
            # Each round has fewer entries, whose keys are the earlier rounds' again: an index
            # still holding the earlier ones would rank keys that no longer exist.
            texts = [f"heron note {round_} {i}" for i in range(8 - 2 * round_)]
            for text in texts:
                remember(http, scope_id, text)
            hits = http.post(
                "/v1/memory/search", json={"scope_id": scope_id, "query": "heron", "limit": 8}
            ).json()["hits"]
            assert sorted(hit["text"] for hit in hits) == sorted(texts)
            assert http.delete(f"/v1/scopes/{scope_id}").status_code == 200
