"""`powercontext export` and `powercontext import` over the API (given `--url` or POWERCONTEXT_URL),
and the client methods under them, sync and async, on both backends: the file is the one the
database commands write, a user without the right gets one line and exit 1, a refused file exit 2.
"""

from __future__ import annotations

import asyncio
import io
import json
import re
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from powercontext_client import AsyncPowerContextClient, PowerContextClient
from powercontext_client._errors import ForbiddenError, InvalidRequestError, NotFoundError
from powercontext_client.cli import main as powercontext

from ..api.test_scope_transfer_http import auth_file
from ..conftest import LiveServer
from ..store.test_scope_import_validation import HOSTILE, hostile, seed
from ..store.test_scope_transfer import table_rows

SCOPE = "project:hostile"  # what `seed` builds


@pytest.fixture
def server(start_server: Callable[..., LiveServer], tmp_path: Path) -> LiveServer:
    server = start_server(POWERCONTEXT_SERVER_AUTH_FILE=str(auth_file(tmp_path / "auth.toml")))
    seed(server.application)
    return server


def test_export_and_import_with_url_go_through_the_api(
    server: LiveServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    owner = ["--url", server.base_url, "--token", "token-owner"]
    exported = tmp_path / "scope.jsonl"
    assert powercontext([*owner, "export", SCOPE, "-o", str(exported)]) == 0
    assert re.fullmatch(
        rf"exported Scope {SCOPE}: 30 rows \(\d+ bytes\) to {exported} in \d+\.\d s\n",
        capsys.readouterr().out,
    )
    assert exported.stat().st_mode & 0o777 == 0o600
    header = json.loads(exported.read_bytes().splitlines()[0])
    assert header["format"] == "powercontext.scope-export" and header["scope_id"] == SCOPE

    with httpx.Client(base_url=server.base_url, headers={"Authorization": "Bearer token-owner"}) as http:
        entries = http.post("/v1/memory/entries/list", json={"scope_id": SCOPE}).json()
        assert http.delete(f"/v1/scopes/{SCOPE}").status_code == 200
        assert powercontext(["import", str(exported), *owner]) == 0  # options after the command too
        assert re.fullmatch(
            rf"imported Scope {SCOPE}: 30 rows, 8 documents indexed in \d+\.\d s\n", capsys.readouterr().out
        )
        assert http.post("/v1/memory/entries/list", json={"scope_id": SCOPE}).json() == entries

        # POWERCONTEXT_URL alone chooses the API too; --scope-id imports under another id.
        monkeypatch.setenv("POWERCONTEXT_URL", server.base_url)
        monkeypatch.setenv("POWERCONTEXT_TOKEN", "token-owner")
        assert powercontext(["import", str(exported), "--scope-id", "project:copy"]) == 0
        copied = http.post("/v1/memory/entries/list", json={"scope_id": "project:copy"}).json()
        assert copied == entries
        again = tmp_path / "again.jsonl"
        assert powercontext(["export", "project:copy", "-o", str(again)]) == 0
        assert again.read_bytes().splitlines()[2:] == exported.read_bytes().splitlines()[2:]


def test_refusals_and_missing_rights_are_one_line_and_leave_nothing(
    server: LiveServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = ["--url", server.base_url]
    exported = tmp_path / "scope.jsonl"
    assert powercontext([*url, "--token", "token-owner", "export", SCOPE, "-o", str(exported)]) == 0
    before = table_rows(server.application.settings.database_url)
    capsys.readouterr()

    denied = tmp_path / "denied.jsonl"
    assert powercontext([*url, "--token", "token-reader", "export", SCOPE, "-o", str(denied)]) == 1
    assert capsys.readouterr().err.startswith("powercontext: HTTP 403 forbidden: ")
    assert not denied.exists() and not list(tmp_path.glob(".denied*"))
    assert powercontext([*url, "--token", "token-reader", "import", str(exported), "--scope-id", "p:x"]) == 1
    assert capsys.readouterr().err.startswith("powercontext: HTTP 403 forbidden: ")

    assert powercontext([*url, "--token", "token-owner", "export", "project:none", "-o", str(denied)]) == 2
    assert capsys.readouterr().err.startswith("powercontext: HTTP 404 scope_not_found: ")
    assert powercontext([*url, "--token", "token-owner", "import", str(exported)]) == 2
    assert capsys.readouterr().err.startswith("powercontext: HTTP 409 scope_exists: ")
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(hostile(exported.read_bytes(), HOSTILE["scope version 0"]))
    assert powercontext([*url, "--token", "token-owner", "import", str(bad), "--scope-id", "p:x"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("powercontext: HTTP 422 invalid_export: ") and err.count("\n") == 1
    assert "[body.2.version] Input should be greater than or equal to 1" in err
    assert table_rows(server.application.settings.database_url) == before


def test_a_database_option_opens_the_database_even_with_a_url_set(
    server: LiveServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POWERCONTEXT_URL", "http://127.0.0.1:9")  # nothing listens there
    database = server.application.settings.database_url
    exported = tmp_path / "scope.jsonl"
    assert powercontext(["export", SCOPE, "-o", str(exported), "--database-url", database]) == 0
    assert json.loads(exported.read_bytes().splitlines()[0])["scope_id"] == SCOPE


def test_the_client_methods_move_a_scope_sync_and_async(server: LiveServer) -> None:
    with PowerContextClient(server.base_url, "token-owner") as pc:
        out = io.BytesIO()
        written = pc.export_scope(SCOPE, out)
        exported = out.getvalue()
        assert written == len(exported) and exported.startswith(b'{"format":"powercontext.scope-export"')
        imported = pc.import_scope(io.BytesIO(exported), scope_id="project:sync")
        assert imported.scope_id == "project:sync" and imported.rows["memory_entry_version"] == 7
        with pytest.raises(NotFoundError):
            pc.export_scope("project:none", out)
        with pytest.raises(InvalidRequestError) as refused:
            pc.import_scope(hostile(exported, HOSTILE["bad kind"]), scope_id="project:bad")
        assert refused.value.code == "invalid_export"
    with PowerContextClient(server.base_url, "token-reader") as reader, pytest.raises(ForbiddenError):
        reader.export_scope(SCOPE, io.BytesIO())

    async def moved() -> tuple[bytes, str]:
        async with AsyncPowerContextClient(server.base_url, "token-owner") as pc:
            chunks: list[bytes] = []
            await pc.export_scope("project:sync", chunks.append)
            lines = b"".join(chunks).splitlines(keepends=True)
            report = await pc.import_scope(iter(lines), scope_id="project:async")
            return b"".join(chunks), report.scope_id

    again, scope_id = asyncio.run(moved())
    assert scope_id == "project:async"
    assert again.splitlines()[2:] == exported.splitlines()[2:]
    with PowerContextClient(server.base_url, "token-owner") as pc:
        copies = [
            pc.list_memory_entries(s, limit=100).entries for s in (SCOPE, "project:sync", "project:async")
        ]
    assert copies[0] == copies[1] == copies[2]
