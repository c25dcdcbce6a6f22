"""`make run` installs requirements/run.lock: the server and nothing of the toolchain.

The run lock must pin every dependency pyproject.toml declares, exactly as the dev lock pins it (so
`make test` tests the versions `make run` serves with), and none of the tools.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TOOLCHAIN = (
    "mypy",
    "ruff",
    "pytest",
    "schemathesis",
    "hypothesis",
    "mkdocs",
    "pylibseekdb",
    "playwright",
    "py-spy",
)


def pins(lock: str) -> dict[str, str]:
    text = (REPO / "requirements" / lock).read_text()
    return dict(re.findall(r"^([a-z0-9][a-z0-9._-]*)==(\S+)$", text, re.MULTILINE))


def test_run_lock_pins_the_servers_dependencies_as_the_dev_lock_does() -> None:
    run, dev = pins("run.lock"), pins("dev.lock")
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    for requirement in declared:
        name = re.split(r"[\[=<>!~ ]", requirement, maxsplit=1)[0].lower()
        assert name in run, f"{name} is a server dependency missing from requirements/run.lock"
    assert {name: version for name, version in run.items() if dev.get(name) != version} == {}


def test_run_lock_holds_no_toolchain() -> None:
    assert sorted(set(pins("run.lock")) & set(TOOLCHAIN)) == []
