"""Install hints lead somewhere: PowerContext is on no package index yet (and `powercontext` on PyPI
is another project), so every hint the docs and the programs give installs from the repository."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# An install command whose argument is a PowerContext distribution by name, not a path:
# `pip install powercontext`, `pipx install "powercontext-client[mcp]"`, `uv pip install -U powercontext`.
_INDEX_HINT = re.compile(
    r"\b(?:pip|pipx|uv pip|uv tool)\s+install\s+(?:-{1,2}[\w-]+(?:[ =]\S+)?\s+)*['\"]?powercontext(?:-client)?\b",
    re.IGNORECASE,
)
# Prose that sends the reader to the index by name.
_NAMED_PACKAGE = re.compile(
    r"install (?:the )?`powercontext(?:-client)?` (?:package|distribution)", re.IGNORECASE
)


def _tracked_text_files() -> list[Path]:
    names = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split("\0")
    keep = (".md", ".py", ".toml", ".mk", ".txt", ".yaml", ".yml", ".js", ".html", "Makefile")
    return [ROOT / n for n in names if n.endswith(keep) and not n.startswith("tests/test_install_hints")]


def test_the_patterns_catch_index_hints() -> None:
    for hint in (
        "pip install powercontext",
        "pip install 'powercontext-client[mcp]'",
        'pipx install "powercontext"',
        "uv pip install -U powercontext-client",
        "install the `powercontext` package",
    ):
        assert _INDEX_HINT.search(hint) or _NAMED_PACKAGE.search(hint), hint
    for fine in (
        "pip install .",
        "pip install './client[mcp]'",
        'pip install "./client[mcp]"',
        "pip install ./client",
    ):
        assert not _INDEX_HINT.search(fine), fine


def test_no_doc_or_message_sends_users_to_an_index_for_powercontext() -> None:
    found = []
    for path in _tracked_text_files():
        if not path.is_file():
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), start=1):
            if _INDEX_HINT.search(line) or _NAMED_PACKAGE.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert found == []
