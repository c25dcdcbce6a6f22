"""Settings of the PowerContext memory provider, read from the environment (and an optional JSON file).

Environment variables win over the file named by ``POWERCONTEXT_HERMES_CONFIG``. Every value is
validated here, so a bad setting disables context for the turn instead of reaching the server.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ._core._contract import DEFAULT_MAX_BYTES, MAX_MAX_BYTES, MIN_MAX_BYTES
from ._core._contract import MAX_SCOPE_ID_CHARS as MAX_SCOPE_CHARS
from ._core.settings import DEFAULT_ASSEMBLY, LEGACY, SettingsError, parse_assembly

DEFAULT_BASE_URL = "http://127.0.0.1:8000"
DEFAULT_SCOPE = "project:{cwd_name}"
MAX_TIMEOUT = 2.0

ENV_CONFIG_FILE = "POWERCONTEXT_HERMES_CONFIG"
# setting name -> (environment variable, key in the JSON config file)
SOURCES: dict[str, tuple[str, str]] = {
    "base_url": ("POWERCONTEXT_HERMES_BASE_URL", "base_url"),
    "token": ("POWERCONTEXT_HERMES_TOKEN", "token"),
    "scope": ("POWERCONTEXT_HERMES_SCOPE", "scope"),
    "max_bytes": ("POWERCONTEXT_HERMES_MAX_BYTES", "max_bytes"),
    "timeout": ("POWERCONTEXT_HERMES_TIMEOUT", "timeout"),
    "assembly": ("POWERCONTEXT_HERMES_CONTEXT_ASSEMBLY", "context_assembly"),
    "capture": ("POWERCONTEXT_HERMES_CAPTURE", "capture"),
}

Mode = Literal["legacy", "assembly"]


class ConfigError(ValueError):
    """A setting is invalid. The message names the setting, never a secret value."""


@dataclass(frozen=True)
class Settings:
    """One immutable snapshot of the configuration; a turn keeps the one it started with."""

    base_url: str
    token: str | None
    scope_id: str
    max_bytes: int
    timeout: float
    # The assembly object as compact JSON (key and section order kept); None means legacy mode.
    assembly_json: str | None
    # Store each completed turn as Memory (POWERCONTEXT_HERMES_CAPTURE, on unless "off").
    capture: bool = True

    @property
    def mode(self) -> Mode:
        return "legacy" if self.assembly_json is None else "assembly"

    @property
    def selects_nothing(self) -> bool:
        """`"sections": []`: the RFC's way to ask for no context at all."""
        return self.assembly_json is not None and json.loads(self.assembly_json).get("sections") == []


def load_settings(environ: Mapping[str, str] | None = None, cwd: Path | None = None) -> Settings:
    """Read, validate and freeze the settings."""
    env = os.environ if environ is None else environ
    raw = _merged_sources(env)
    return Settings(
        base_url=_base_url(raw.get("base_url")),
        token=_token(raw.get("token")),
        scope_id=_scope(raw.get("scope"), cwd or Path.cwd()),
        max_bytes=_max_bytes(raw.get("max_bytes")),
        timeout=_timeout(raw.get("timeout")),
        assembly_json=_assembly(raw.get("assembly")),
        capture=_capture(raw.get("capture")),
    )


def _merged_sources(env: Mapping[str, str]) -> dict[str, object]:
    file_values = _file_values(env.get(ENV_CONFIG_FILE, ""))
    merged: dict[str, object] = {}
    for name, (env_name, file_key) in SOURCES.items():
        if env.get(env_name, "") != "":
            merged[name] = env[env_name]
        elif file_key in file_values:
            merged[name] = file_values[file_key]
    return merged


def _file_values(path: str) -> dict[str, Any]:
    if not path:
        return {}
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{ENV_CONFIG_FILE} is not a readable JSON file ({type(exc).__name__})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{ENV_CONFIG_FILE} must hold a JSON object")
    unknown = set(data) - {key for _, key in SOURCES.values()}
    if unknown:
        raise ConfigError(f"{ENV_CONFIG_FILE} has unknown keys: {sorted(unknown)}")
    return data


def _base_url(value: object) -> str:
    url = DEFAULT_BASE_URL if value is None else value
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise ConfigError("POWERCONTEXT_HERMES_BASE_URL must be an http:// or https:// URL")
    return url.rstrip("/")


def _token(value: object) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str) or any(ch in value for ch in "\r\n"):
        raise ConfigError("POWERCONTEXT_HERMES_TOKEN must be a single-line string")
    return value


def _scope(value: object, cwd: Path) -> str:
    template = DEFAULT_SCOPE if value is None else value
    if not isinstance(template, str):
        raise ConfigError("POWERCONTEXT_HERMES_SCOPE must be a string")
    scope_id = template.replace("{cwd_name}", cwd.name)
    if not scope_id.strip() or len(scope_id) > MAX_SCOPE_CHARS:
        raise ConfigError(
            f"POWERCONTEXT_HERMES_SCOPE must give a non-blank Scope id of at most {MAX_SCOPE_CHARS} chars"
        )
    return scope_id


def _max_bytes(value: object) -> int:
    if value is None:
        return DEFAULT_MAX_BYTES
    number = _strict_int(value)
    if number is None or not MIN_MAX_BYTES <= number <= MAX_MAX_BYTES:
        raise ConfigError(
            f"POWERCONTEXT_HERMES_MAX_BYTES must be an integer from {MIN_MAX_BYTES} through {MAX_MAX_BYTES}"
        )
    return number


def _strict_int(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        return int(value.strip())
    return None


def _timeout(value: object) -> float:
    if value is None:
        return MAX_TIMEOUT
    try:
        seconds = (
            float(value) if isinstance(value, str | int | float) and not isinstance(value, bool) else 0.0
        )
    except ValueError:
        seconds = 0.0
    if not math.isfinite(seconds) or seconds <= 0:
        raise ConfigError("POWERCONTEXT_HERMES_TIMEOUT must be a positive number of seconds")
    return min(seconds, MAX_TIMEOUT)


def _assembly(value: object) -> str | None:
    """Unset: the hosts' default (Memory only, eight entries); `legacy`: no `assembly` key."""
    if value is None:
        return DEFAULT_ASSEMBLY
    if isinstance(value, dict):
        value = json.dumps(value)
    if not isinstance(value, str):
        raise ConfigError(f"{SOURCES['assembly'][0]} must be a JSON object or `{LEGACY}`")
    try:
        return parse_assembly(value, SOURCES["assembly"][0])
    except SettingsError as exc:
        raise ConfigError(str(exc)) from None


def _capture(value: object) -> bool:
    """On ("on", the default) or off ("off"); a JSON file may also say true or false."""
    if value is None or value is True:
        return True
    if value is False:
        return False
    word = value.strip().lower() if isinstance(value, str) else None
    if word not in {"on", "off"}:
        raise ConfigError("POWERCONTEXT_HERMES_CAPTURE must be on or off")
    return word == "on"
