"""Scope ids `.` and `..` through the `powercontext` command (issue 37, item 7): every command that
puts a Scope id in a path reaches that Scope, not the path its dot segments would normalise to."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ..conftest import LiveServer
from .test_cli import Run, runner


@pytest.fixture
def cli(start_server: Callable[..., LiveServer], capsysbinary: pytest.CaptureFixture[bytes]) -> Run:
    return runner(start_server().base_url, capsysbinary)


@pytest.mark.parametrize("scope_id", [".", ".."])
def test_a_dot_scope_through_the_command(cli: Run, scope_id: str) -> None:
    assert cli("create-scope", "neighbour", "--title", "next door").code == 0
    assert cli("create-scope", scope_id, "--title", "dots").code == 0
    shown = cli("--json", "get-scope", scope_id)
    assert shown.code == 0 and (shown.json["scope_id"], shown.json["title"]) == (scope_id, "dots")
    updated = cli("--json", "update-scope", scope_id, "--expected-version", "1", "--title", "moved")
    assert updated.code == 0 and (updated.json["scope_id"], updated.json["version"]) == (scope_id, 2)
    assert cli("remember", scope_id, "Dots are ids too.").code == 0
    erased = cli("--json", "delete-scope", scope_id, "--yes")
    assert erased.code == 0 and erased.json["scope_id"] == scope_id
    assert cli("get-scope", scope_id).code != 0
    assert cli("--json", "get-scope", "neighbour").json["title"] == "next door"
