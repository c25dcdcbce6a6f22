"""Where the hosts keep their files: the PowerContext config and state directories (XDG)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path


def config_dir(environ: Mapping[str, str]) -> Path:
    """`$XDG_CONFIG_HOME/powercontext`, by default `~/.config/powercontext`."""
    base = environ.get("XDG_CONFIG_HOME") or str(Path(environ.get("HOME") or Path.home()) / ".config")
    return Path(base) / "powercontext"


def state_dir(environ: Mapping[str, str]) -> Path:
    """`$XDG_STATE_HOME/powercontext`, by default `~/.local/state/powercontext`."""
    base = environ.get("XDG_STATE_HOME") or str(Path(environ.get("HOME") or Path.home()) / ".local" / "state")
    return Path(base) / "powercontext"
