"""Export and import over the API (issue 36 item 3), on both backends: a Scope exported with
`GET /v1/scopes/{id}/export`, erased, and imported with `POST /v1/scopes/{id}/import` answers every
read as before, byte for byte; only `scope.export` exports and only `server.admin` imports; a
cut-off or hostile stream leaves nothing behind.
"""

from __future__ import annotations

import json
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from powercontext_runtime import token_digest

from ..conftest import LiveServer
from ..store.test_backend_parity import ASSEMBLIES
from ..store.test_scope_import_validation import HOSTILE, hostile, seed
from ..store.test_scope_transfer import QUERIES, REFERENCED, SCOPE, Seeded, build, observe, table_rows

NDJSON = {"Content-Type": "application/x-ndjson"}
# name -> (actions, scopes)
PRINCIPALS = {
    "owner": ["scope.read", "scope.write", "scope.review", "scope.erase", "scope.export", "server.admin"],
    "reader": ["scope.read"],
    "exporter": ["scope.export"],
    "admin": ["scope.read", "scope.write", "scope.review", "scope.erase", "server.admin"],
}


def auth_file(path: Path) -> Path:
    lines = []
    for name, actions in PRINCIPALS.items():
        rendered = ", ".join(f'"{a}"' for a in actions)
        lines += [
            "[[principal]]",
            f'name = "{name}"',
            f'token_sha256 = "{token_digest(f"token-{name}")}"',
            f'grants = [{{ actions = [{rendered}], scopes = ["*"] }}]',
            "",
        ]
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


@pytest.fixture
def server(start_server: Callable[..., LiveServer], tmp_path: Path) -> LiveServer:
    return start_server(POWERCONTEXT_SERVER_AUTH_FILE=str(auth_file(tmp_path / "auth.toml")))


def client(server: LiveServer, principal: str) -> httpx.Client:
    headers = {"Authorization": f"Bearer token-{principal}"}
    return httpx.Client(base_url=server.base_url, headers=headers, timeout=60)


def export(http: httpx.Client, scope_id: str) -> bytes:
    with http.stream("GET", f"/v1/scopes/{scope_id}/export") as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"] == "application/x-ndjson"
        return b"".join(response.iter_bytes())


def lines_of(body: bytes) -> Iterator[bytes]:
    """The body sent as a stream (chunked), a line at a time."""
    yield from body.splitlines(keepends=True)


def http_reads(http: httpx.Client, seeded: Seeded) -> list[bytes]:
    """Prepares (legacy and assembled) and every old citation, as the bytes the server sends."""
    seen = []
    for query in QUERIES:
        for assembly in ASSEMBLIES:
            request: dict[str, Any] = {"scope_id": SCOPE, "query": query, "max_bytes": 4000}
            if assembly is not None:
                request["assembly"] = assembly
            seen.append(http.post("/v1/context/prepare", json=request).content)
    for scope_id, citation in seeded.citations:
        got = http.post("/v1/memory/entries/get", json={"scope_id": scope_id, "citation": citation})
        seen.append(got.content)
    seen.append(http.get(f"/v1/scopes/{SCOPE}").content)
    return seen


def test_export_delete_import_over_http_answers_byte_for_byte_as_before(server: LiveServer) -> None:
    seeded = build(server.application)
    with client(server, "owner") as owner:
        before = http_reads(owner, seeded)
        before_runtime = observe(server.application, seeded)
        exported = export(owner, SCOPE)
        assert owner.delete(f"/v1/scopes/{SCOPE}").status_code == 200
        assert owner.get(f"/v1/scopes/{SCOPE}").status_code == 404
        imported = owner.post(f"/v1/scopes/{SCOPE}/import", content=lines_of(exported), headers=NDJSON)
        assert imported.status_code == 201, imported.text
        header = json.loads(exported.splitlines()[0])
        assert imported.json() == {
            "scope_id": SCOPE,
            "rows": {"scope": 1, **header["rows"]},
            "indexed": imported.json()["indexed"],
        }
        assert http_reads(owner, seeded) == before
        assert observe(server.application, seeded) == before_runtime
        # The export of the imported Scope is the same file, but for the time it was taken.
        assert export(owner, SCOPE).splitlines()[1:] == exported.splitlines()[1:]


def test_an_export_imports_under_a_new_id_beside_the_original(server: LiveServer) -> None:
    build(server.application)
    with client(server, "owner") as owner:
        exported = export(owner, SCOPE)
        imported = owner.post("/v1/scopes/project:copy/import", content=exported, headers=NDJSON)
        assert imported.status_code == 201, imported.text
        copy, original = (owner.get(f"/v1/scopes/{s}").json() for s in ("project:copy", SCOPE))
        assert copy == {**original, "scope_id": "project:copy"}
        listed = [
            owner.post("/v1/memory/entries/list", json={"scope_id": s, "limit": 100}).json()["entries"]
            for s in ("project:copy", SCOPE)
        ]
        assert listed[0] == listed[1]
        again = owner.post(f"/v1/scopes/{SCOPE}/import", content=exported, headers=NDJSON)
        assert again.status_code == 409 and again.json()["error"]["code"] == "scope_exists"


def test_only_scope_export_exports_and_only_server_admin_imports(server: LiveServer) -> None:
    build(server.application)
    with client(server, "owner") as owner:
        exported = export(owner, SCOPE)
    before = table_rows(server.application.settings.database_url)
    for principal in ("reader", "admin"):  # read-only, and every right but scope.export
        with client(server, principal) as http:
            response = http.get(f"/v1/scopes/{SCOPE}/export")
            assert response.status_code == 403 and response.json()["error"]["code"] == "forbidden"
            assert b"deploy" not in response.content
    for principal in ("reader", "exporter"):
        with client(server, principal) as http:
            response = http.post("/v1/scopes/project:new/import", content=exported, headers=NDJSON)
            assert response.status_code == 403 and response.json()["error"]["code"] == "forbidden"
    with client(server, "exporter") as exporter:
        assert export(exporter, SCOPE).splitlines()[1:] == exported.splitlines()[1:]
    with httpx.Client(base_url=server.base_url) as anonymous:
        assert anonymous.get(f"/v1/scopes/{SCOPE}/export").status_code == 401
        assert anonymous.post("/v1/scopes/project:new/import", content=exported).status_code == 401
    assert table_rows(server.application.settings.database_url) == before


def test_importing_needs_read_on_every_referenced_scope(
    start_server: Callable[..., LiveServer], tmp_path: Path
) -> None:
    path = tmp_path / "auth.toml"
    auth_file(path)
    with path.open("a", encoding="utf-8") as file:  # server.admin everywhere, scope.read on project:* only
        file.write(
            '[[principal]]\nname = "projects"\n'
            f'token_sha256 = "{token_digest("token-projects")}"\n'
            'grants = [{ actions = ["server.admin"], scopes = ["*"] },'
            ' { actions = ["scope.read"], scopes = ["project:*"] }]\n'
        )
    server = start_server(POWERCONTEXT_SERVER_AUTH_FILE=str(path))
    build(server.application)  # SCOPE references REFERENCED, a team:* Scope
    with client(server, "owner") as owner:
        exported = export(owner, SCOPE)
    with client(server, "projects") as projects:
        response = projects.post("/v1/scopes/project:new/import", content=exported, headers=NDJSON)
        assert response.status_code == 403
        assert projects.get("/v1/scopes/project:new").status_code == 404
    assert REFERENCED.startswith("team:")


def test_a_cut_off_or_broken_stream_leaves_nothing_behind(server: LiveServer) -> None:
    build(server.application)
    url = server.application.settings.database_url
    with client(server, "owner") as owner:
        exported = export(owner, SCOPE)
        before = table_rows(url)
        lines = exported.splitlines(keepends=True)
        cut = {
            "whole lines missing": b"".join(lines[:-3]),
            "cut inside a line": exported[: len(exported) - 40],
            "header only": lines[0],
            "empty": b"",
        }
        for name, body in cut.items():
            response = owner.post("/v1/scopes/project:new/import", content=lines_of(body), headers=NDJSON)
            assert response.status_code == 422, (name, response.text)
            assert response.json()["error"]["code"] == "invalid_export", name
            assert table_rows(url) == before, name

        def leaving() -> Iterator[bytes]:  # the client goes away halfway through its upload
            yield from lines[: len(lines) // 2]
            raise OSError("the client went away")

        with pytest.raises(OSError):
            owner.post("/v1/scopes/project:new/import", content=leaving(), headers=NDJSON)
        response = owner.post("/v1/scopes/project:new/import", content=exported, headers={})
        assert response.status_code == 415
        assert response.json()["error"]["details"] == {"supported": ["application/x-ndjson"]}
        assert owner.get("/v1/scopes/project:new").status_code == 404
    assert table_rows(url) == before


def test_hostile_rows_are_refused_with_422_and_every_read_still_answers(server: LiveServer) -> None:
    """Issue 37 item 5 over HTTP: a refused file imports nothing, and the server keeps answering
    (before, a `"version": 0` Scope made every `GET /v1/scopes` a 500)."""
    seed(server.application, "project:source")
    url = server.application.settings.database_url
    with client(server, "owner") as owner:
        good = export(owner, "project:source")
        scopes = owner.get("/v1/scopes").json()
        before = table_rows(url)
        for name, edit in HOSTILE.items():
            body = hostile(good, edit)
            response = owner.post("/v1/scopes/project:target/import", content=body, headers=NDJSON)
            assert response.status_code == 422, (name, response.text)
            error = response.json()["error"]
            line = error["details"]["line"]  # null when the file as a whole is at fault
            assert error["code"] == "invalid_export" and (line is None or line > 0), name
            assert "hostile" not in response.text.lower() and "evil" not in response.text, name
            assert table_rows(url) == before, name
            assert owner.get("/v1/scopes").json() == scopes, name
        version_zero = owner.post(
            "/v1/scopes/project:target/import",
            content=hostile(good, HOSTILE["scope version 0"]),
            headers=NDJSON,
        ).json()["error"]["details"]
        assert version_zero == {
            "line": 2,
            "errors": [
                {
                    "type": "greater_than_equal",
                    "loc": ["body", 2, "version"],
                    "msg": "Input should be greater than or equal to 1",
                }
            ],
        }
        assert owner.post("/v1/scopes/project:target/import", content=good, headers=NDJSON).status_code == 201


def test_an_endless_line_is_refused_without_being_held(server: LiveServer) -> None:
    """The import's body has no size cap, but a line longer than 1 MiB is refused as soon as that
    much of it arrived: the server never holds the rest (it runs in this process, so it is traced)."""
    seed(server.application, "project:source")
    with client(server, "owner") as owner:
        header, scope, *_ = export(owner, "project:source").splitlines(keepends=True)

        def body() -> Iterator[bytes]:
            yield header + scope + b'{"type":"counter","name":"'
            for _ in range(640):  # 40 MiB without a line feed
                yield b"x" * (64 << 10)

        tracemalloc.start()
        try:
            try:
                response = owner.post("/v1/scopes/project:target/import", content=body(), headers=NDJSON)
            except httpx.TransportError:  # the server may close before the client stops sending
                response = None
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        if response is not None:
            assert response.status_code == 422 and response.json()["error"]["details"]["line"] == 3
        assert peak < 8 << 20
        assert owner.get("/v1/scopes/project:target").status_code == 404


def test_a_slow_import_is_not_cut_off_while_its_lines_keep_coming(
    start_server: Callable[..., LiveServer], tmp_path: Path
) -> None:
    """A remote user's import can take longer than the body deadline (1 s here) as long as it keeps
    arriving; a JSON body that takes as long is still refused with 408."""
    server = start_server(
        POWERCONTEXT_SERVER_AUTH_FILE=str(auth_file(tmp_path / "auth.toml")),
        POWERCONTEXT_SERVER_BODY_TIMEOUT_S="1",
    )
    seed(server.application, "project:source")
    with client(server, "owner") as owner:
        lines = export(owner, "project:source").splitlines(keepends=True)

        def slowly(pieces: list[bytes]) -> Iterator[bytes]:
            for piece in pieces:
                time.sleep(2.5 / len(pieces))
                yield piece

        imported = owner.post("/v1/scopes/project:slow/import", content=slowly(lines), headers=NDJSON)
        assert imported.status_code == 201, imported.text
        body = json.dumps({"scope_id": "project:slow", "text": "a slow note"}).encode()
        try:
            slow_json = owner.post(
                "/v1/memory/remember",
                content=slowly([body[i : i + 8] for i in range(0, len(body), 8)]),
                headers={"Content-Type": "application/json"},
            )
            assert slow_json.status_code == 408
        except httpx.TransportError:  # closed while the client was still sending: refused too
            pass
