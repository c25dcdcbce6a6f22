"""Which Scope a hook reads and writes, in this order:

1. `POWERCONTEXT_SCOPE` in the hook's environment;
2. the binding of the workspace: `powercontext bind SCOPE` (or `powercontext setup … --scope SCOPE`)
   run in a directory binds it and every directory below it, kept in `bindings.json` in the
   PowerContext config directory (`$XDG_CONFIG_HOME/powercontext/`); the nearest bound ancestor of
   the session's working directory wins;
3. none: no context, and a diagnostic that says how to bind.

A Scope id is never made up from a path: only the user names one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from ._contract import MAX_SCOPE_ID_CHARS
from .paths import config_dir

SCOPE_ENV = "POWERCONTEXT_SCOPE"
BINDINGS_FILE = "bindings.json"
HOW_TO_BIND = f"run `powercontext bind SCOPE_ID` in the workspace, or set {SCOPE_ENV}"


class ScopeError(ValueError):
    """A Scope id that the contract would refuse; the message does not repeat it."""


class ScopeChoice(NamedTuple):
    scope_id: str | None
    source: str  # "environment", "binding of DIR", or "none"


def bindings_path(environ: Mapping[str, str]) -> Path:
    return config_dir(environ) / BINDINGS_FILE


def check_scope_id(scope_id: str) -> str:
    """The contract's rule for Scope ids (1 to 256 characters, not blank, no `/`, `%` or controls)."""
    if (
        not scope_id.strip()
        or len(scope_id) > MAX_SCOPE_ID_CHARS
        or any(ch in "/%" or ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F for ch in scope_id)
    ):
        raise ScopeError(
            f"a Scope id is 1 to {MAX_SCOPE_ID_CHARS} characters, not blank, without `/`, `%` or control characters"
        )
    return scope_id


def read_bindings(environ: Mapping[str, str]) -> dict[str, str]:
    try:
        raw = json.loads(bindings_path(environ).read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return {}
    if not isinstance(raw, dict):
        return {}
    return {k: v for k, v in raw.items() if isinstance(k, str) and isinstance(v, str)}


def choose(cwd: str, environ: Mapping[str, str]) -> ScopeChoice:
    explicit = environ.get(SCOPE_ENV, "")
    if explicit:
        return ScopeChoice(explicit, "environment")
    bindings = read_bindings(environ)
    if bindings and cwd:
        here = Path(cwd).resolve()
        for directory in (here, *here.parents):
            scope_id = bindings.get(str(directory))
            if scope_id:
                return ScopeChoice(scope_id, f"binding of {directory}")
    return ScopeChoice(None, "none")


def bind(workspace: Path, scope_id: str | None, environ: Mapping[str, str]) -> Path:
    """Bind `workspace` to `scope_id` (None removes its binding); returns the bindings file."""
    from .files import locked, write_atomically  # only `bind` writes; hooks only read

    path = bindings_path(environ)
    key = str(workspace.resolve())
    with locked(path.with_name(BINDINGS_FILE + ".lock")):
        bindings = read_bindings(environ)
        if scope_id is None:
            bindings.pop(key, None)
        else:
            bindings[key] = check_scope_id(scope_id)
        write_atomically(path, json.dumps(bindings, indent=2, ensure_ascii=False) + "\n")
    return path
