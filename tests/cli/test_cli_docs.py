"""docs/cli.md and the README: every command and option is documented, and the sessions replay.

A ```` ```console ```` block right after `<!-- cli-test -->` is a session: each `$ powercontext ...`
(or `$ .venv/bin/powercontext ...`) line runs in-process against a new server, and the lines up to
the next `$ ` are what it prints (standard output, then standard error), up to one final line feed.
Request ids change from run to run; the page writes them as `(request id …)`.
"""

from __future__ import annotations

import argparse
import re
import shlex
from collections.abc import Callable
from pathlib import Path

import pytest

from powercontext_client.cli import build_parser, main

from ..conftest import LiveServer

ROOT = Path(__file__).resolve().parents[2]
CLI_DOC = ROOT / "docs" / "cli.md"
SESSION_PAGES = [CLI_DOC, ROOT / "README.md"]
_REQUEST_ID = re.compile(r"\(request id [0-9a-f]+\)")


def sessions(page: Path, marker: str = "cli-test") -> list[list[tuple[str, str]]]:
    """Each ```` ```console ```` block right after `<!-- marker -->` in `page`, as (command line,
    expected output) pairs."""
    pattern = re.compile(rf"^<!-- {marker} -->\n```console\n(.*?)```$", re.MULTILINE | re.DOTALL)
    found = []
    for block in pattern.findall(page.read_text(encoding="utf-8")):
        steps: list[tuple[str, list[str]]] = []
        for line in block.splitlines():
            if line.startswith("$ "):
                steps.append((line[2:], []))
            else:
                assert steps, f"{page.name}: output before the first command: {line!r}"
                steps[-1][1].append(line)
        found.append([(command, "\n".join(out)) for command, out in steps])
    return found


def subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser({})
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def doc_sections() -> dict[str, str]:
    text = CLI_DOC.read_text(encoding="utf-8")
    parts = re.split(r"^### `([a-z-]+)`\n", text, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_every_command_has_a_section_naming_each_of_its_arguments_and_options() -> None:
    sections = doc_sections()
    commands = subcommands()
    assert set(sections) == set(commands)
    for name, sub in commands.items():
        if name in ("serve", "token", "copy-store"):
            continue  # the server's parser; its flags and arguments are checked below
        for action in sub._actions:
            if action.dest in ("help", "url", "token", "timeout", "json"):
                continue
            documented = action.option_strings or [str(action.metavar)]
            for word in documented:
                assert re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", sections[name]), f"{name}: {word}"


def server_subcommand(command: str) -> argparse.ArgumentParser:
    """The server package's own parser of `command` (the client hands these commands over)."""
    from powercontext_server.cli import _parser

    (found,) = [
        sub
        for action in _parser()._actions
        if isinstance(action, argparse._SubParsersAction)
        for name, sub in action.choices.items()
        if name == command
    ]
    return found


def test_serve_section_documents_the_server_flags() -> None:
    serve = server_subcommand("serve")
    section = doc_sections()["serve"]
    for action in serve._actions:
        for option in action.option_strings:
            if option.startswith("--") and option != "--help":
                assert f"`{option} " in section


def test_copy_store_section_names_its_arguments() -> None:
    copy = server_subcommand("copy-store")
    section = doc_sections()["copy-store"]
    positionals = [action.metavar for action in copy._actions if not action.option_strings]
    assert positionals == ["SOURCE", "TARGET"]
    assert "`powercontext copy-store SOURCE TARGET`" in section


def test_connection_options_and_environment_variables_are_documented() -> None:
    text = CLI_DOC.read_text(encoding="utf-8")
    for word in ("`--url URL`", "`--token TOKEN`", "`--timeout SECONDS`", "`--json`"):
        assert word in text
    assert "POWERCONTEXT_URL" in text and "POWERCONTEXT_TOKEN" in text


@pytest.mark.parametrize("page", SESSION_PAGES, ids=[p.name for p in SESSION_PAGES])
def test_documented_sessions_print_what_the_page_shows(
    page: Path,
    start_server: Callable[..., LiveServer],
    capsysbinary: pytest.CaptureFixture[bytes],
) -> None:
    found = sessions(page)
    assert found, f"{page.name} has no <!-- cli-test --> session"
    for steps in found:
        server = start_server()
        for command, expected in steps:
            argv = shlex.split(command)
            assert argv[0] in ("powercontext", ".venv/bin/powercontext"), command
            main(["--url", server.base_url, *argv[1:]])
            captured = capsysbinary.readouterr()
            printed = (captured.out + captured.err).decode("utf-8")
            printed = _REQUEST_ID.sub("(request id …)", printed)
            assert printed in (expected, expected + "\n"), f"{page.name}: $ {command}"
