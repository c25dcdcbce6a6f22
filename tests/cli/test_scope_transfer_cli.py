"""`powercontext export` and `powercontext import` as a user types them: handed by the client's
command to the server package, the database chosen as `serve` chooses it, a progress bar only on a
terminal, and documented in docs/cli.md (the behaviour itself: tests/store/test_scope_transfer.py)."""

from __future__ import annotations

import argparse
import io
import re
from pathlib import Path

import pytest

from powercontext_api.models import GetScopeParameters, RememberRequest, ScopeCreateRequest
from powercontext_client.cli import SERVER_COMMANDS, build_parser
from powercontext_client.cli import main as powercontext
from powercontext_runtime import Settings, open_application

from .test_cli_docs import doc_sections, server_subcommand


def seeded_data_dir(data_dir: Path) -> None:
    app = open_application(Settings.from_env({"POWERCONTEXT_SERVER_DATA_DIR": str(data_dir)}))
    try:
        app.create_scope(ScopeCreateRequest.model_validate({"scope_id": "project:demo", "title": "Demo"}))
        for text in ("First note.", "第二条 记忆。"):
            app.remember(RememberRequest.model_validate({"scope_id": "project:demo", "text": text}))
    finally:
        app.close()


def scope_title(data_dir: Path) -> str:
    app = open_application(Settings.from_env({"POWERCONTEXT_SERVER_DATA_DIR": str(data_dir)}))
    try:
        return app.get_scope(GetScopeParameters.model_validate({"scope_id": "project:demo"})).title
    finally:
        app.close()


def test_the_commands_take_the_database_as_serve_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seeded_data_dir(tmp_path / "a")
    export_file = tmp_path / "demo.jsonl"
    # POWERCONTEXT_SERVER_DATA_DIR, as `serve` reads it.
    monkeypatch.setenv("POWERCONTEXT_SERVER_DATA_DIR", str(tmp_path / "a"))
    assert powercontext(["export", "project:demo", "--output", str(export_file)]) == 0
    assert capsys.readouterr().out.startswith(f"exported Scope project:demo: 7 rows to {export_file} in ")
    assert export_file.stat().st_mode & 0o777 == 0o600  # everything the Scope remembers, for its owner

    # POWERCONTEXT_SERVER_DATABASE_URL, then --data-dir over it, then --database-url.
    monkeypatch.setenv("POWERCONTEXT_SERVER_DATABASE_URL", f"sqlite:///{tmp_path / 'b' / 'store.sqlite3'}")
    assert powercontext(["import", str(export_file)]) == 0
    assert re.fullmatch(
        r"imported Scope project:demo: 7 rows, 2 documents indexed in \d+\.\d s\n", capsys.readouterr().out
    )
    assert (tmp_path / "b" / "store.sqlite3").is_file()
    assert powercontext(["import", str(export_file), "--data-dir", str(tmp_path / "c")]) == 0
    assert scope_title(tmp_path / "c") == "Demo"
    url = f"sqlite:///{tmp_path / 'd.sqlite3'}"
    assert powercontext(["import", str(export_file), "--database-url", url]) == 0
    assert (tmp_path / "d.sqlite3").is_file()
    capsys.readouterr()

    assert powercontext(["import", str(export_file), "--database-url", url, "--data-dir", str(tmp_path)]) == 2
    assert "Give --database-url or --data-dir, not both." in capsys.readouterr().err
    assert powercontext(["import", str(export_file), "--database-url", "postgres://x/y"]) == 2
    assert "must start with sqlite:/// or mysql+pymysql://" in capsys.readouterr().err
    assert powercontext(["export", "project:demo"]) == 2  # --output is required
    assert "--output" in capsys.readouterr().err


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_progress_bar_shows_on_a_terminal_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seeded_data_dir(tmp_path / "a")
    export_file = tmp_path / "demo.jsonl"
    source, target = ["--data-dir", str(tmp_path / "a")], ["--data-dir", str(tmp_path / "b")]
    assert powercontext(["export", "project:demo", "-o", str(export_file), *source]) == 0
    assert capsys.readouterr().err == ""

    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    assert powercontext(["export", "project:demo", "-o", str(export_file), *source]) == 0
    assert powercontext(["import", str(export_file), *target]) == 0
    drawn = terminal.getvalue()
    for stage in ("export: ", "import: ", "index: "):
        assert stage in drawn
    assert "0/7 " in drawn and "0/2 " in drawn and "rows/s" in drawn  # the totals are known up front


def test_the_client_lists_both_commands_and_hands_them_to_the_server() -> None:
    assert {"export", "import"} <= set(SERVER_COMMANDS)
    help_text = build_parser({}).format_help()
    assert "export" in help_text and "import" in help_text


@pytest.mark.parametrize(
    ("command", "usage"),
    [
        ("export", "`powercontext export SCOPE_ID --output FILE [--data-dir DATA_DIR] [--database-url URL]`"),
        (
            "import",
            "`powercontext import FILE [--scope-id SCOPE_ID] [--data-dir DATA_DIR] [--database-url URL]`",
        ),
    ],
)
def test_docs_name_every_argument_and_option(command: str, usage: str) -> None:
    section = doc_sections()[command]
    assert usage in section
    parser: argparse.ArgumentParser = server_subcommand(command)
    for action in parser._actions:
        if action.dest == "help":
            continue
        for word in action.option_strings or [str(action.metavar)]:
            assert re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", section), f"{command}: {word}"
