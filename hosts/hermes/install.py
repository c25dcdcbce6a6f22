"""Install the PowerContext memory provider into a Hermes home (standard library only).

    python -m hosts.hermes.install [--hermes-home DIR] [--enable]
    python hosts/hermes/install.py [--hermes-home DIR] [--enable]

Copies hosts/hermes/powercontext_memory/ to $HERMES_HOME/plugins/powercontext/ (replacing an older
copy). With --enable it also sets `memory.provider: powercontext` in $HERMES_HOME/config.yaml,
editing only that line so the rest of the file (and its comments) stays as it was.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

PROVIDER = "powercontext"
PLUGIN_SOURCE = Path(__file__).resolve().parent / "powercontext_memory"
PROVIDER_LINE = f"provider: {PROVIDER}"

_TOP_MEMORY = re.compile(r"^memory:[ \t]*(?P<value>[^#\s][^#]*?)?[ \t]*(#.*)?$")
_EMPTY_VALUES = {"{}", "null", "~"}


class InstallError(Exception):
    """The installation cannot go on; the message says what to fix."""


def default_hermes_home() -> Path:
    return Path(os.environ.get("HERMES_HOME") or Path.home() / ".hermes")


def install_plugin(hermes_home: Path) -> Path:
    """Copy the plugin to `<home>/plugins/powercontext/` and return that directory."""
    target = hermes_home / "plugins" / PROVIDER
    if target.exists():
        shutil.rmtree(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(PLUGIN_SOURCE, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return target


def enable_provider(config_text: str) -> str:
    """`config_text` with `memory.provider` set to powercontext (minimal hand-written YAML)."""
    lines = config_text.splitlines(keepends=True)
    start = _memory_line(lines)
    if start is None:
        prefix = "" if not config_text or config_text.endswith("\n") else "\n"
        return f"{config_text}{prefix}memory:\n  {PROVIDER_LINE}\n"
    end = _block_end(lines, start)
    indent = _child_indent(lines[start + 1 : end])
    for index in range(start + 1, end):
        if re.match(rf"^{indent}provider:(\s|$)", lines[index]):
            lines[index] = f"{indent}{PROVIDER_LINE}\n"
            return "".join(lines)
    lines.insert(start + 1, f"{indent}{PROVIDER_LINE}\n")
    return "".join(lines)


def _memory_line(lines: list[str]) -> int | None:
    """Index of the top-level `memory:` key, normalised to a block; None if there is none."""
    for index, line in enumerate(lines):
        match = _TOP_MEMORY.match(line.rstrip("\r\n"))
        if not match:
            continue
        value = match.group("value")
        if value is not None and value.strip() not in _EMPTY_VALUES:
            raise InstallError("config.yaml has an inline `memory:` value; set memory.provider by hand")
        if value is not None or not line.endswith("\n"):
            lines[index] = "memory:\n"
        return index
    return None


def _block_end(lines: list[str], start: int) -> int:
    for index in range(start + 1, len(lines)):
        line = lines[index]
        if line.strip() and not line.lstrip().startswith("#") and not line[0].isspace():
            return index
    return len(lines)


def _child_indent(block: list[str]) -> str:
    for line in block:
        if line.strip() and not line.lstrip().startswith("#"):
            return line[: len(line) - len(line.lstrip())]
    return "  "


def write_enabled_config(hermes_home: Path) -> Path:
    config = hermes_home / "config.yaml"
    text = config.read_text(encoding="utf-8") if config.exists() else ""
    updated = enable_provider(text)
    hermes_home.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=hermes_home, delete=False) as handle:
        handle.write(updated)
    os.replace(handle.name, config)
    return config


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Install the PowerContext memory provider for Hermes.")
    parser.add_argument("--hermes-home", type=Path, default=None, help="default: $HERMES_HOME or ~/.hermes")
    parser.add_argument("--enable", action="store_true", help="set memory.provider: powercontext")
    args = parser.parse_args(argv)
    home: Path = args.hermes_home or default_hermes_home()
    try:
        print(f"installed {install_plugin(home)}")
        if args.enable:
            print(f"enabled memory.provider: {PROVIDER} in {write_enabled_config(home)}")
    except (InstallError, OSError) as exc:
        print(f"install failed: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
