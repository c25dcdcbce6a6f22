"""The log levels the docs list are exactly the ones `POWERCONTEXT_SERVER_LOG_LEVEL` accepts.

The accepted ones are found by asking the server's settings, not by reading a constant, so the
test follows whatever decides at startup.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from powercontext_runtime import ConfigurationError
from powercontext_server.settings import LOG_LEVELS, HttpSettings

ROOT = Path(__file__).resolve().parents[2]
VARIABLE = "POWERCONTEXT_SERVER_LOG_LEVEL"


def accepted(level: str) -> bool:
    try:
        HttpSettings.from_env({VARIABLE: level})
    except ConfigurationError:
        return False
    return True


def configuration_page_levels() -> list[str]:
    text = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    section = text.split(f"## `{VARIABLE}`\n", 1)[1].split("\n## ", 1)[0]
    (listed,) = re.findall(r"One of (.*?);", section, re.S)
    return re.findall(r"`([a-z]+)`", listed)


def readme_levels() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    (row,) = [line for line in text.splitlines() if line.startswith(f"| `{VARIABLE}` |")]
    return re.findall(r"`([a-z]+)`", row.split("|")[3])


@pytest.mark.parametrize(
    "documented", [configuration_page_levels, readme_levels], ids=["configuration", "readme"]
)
def test_documented_log_levels_are_exactly_the_accepted_ones(documented: Callable[[], list[str]]) -> None:
    levels = documented()
    # Every level the server knows (the candidates), documented once each, in the server's order.
    assert levels == [level for level in LOG_LEVELS if accepted(level)]
    for level in levels:
        assert accepted(level.upper()), f"{level}: documented as case-insensitive"
    assert not accepted("verbose") and not accepted("warn")
