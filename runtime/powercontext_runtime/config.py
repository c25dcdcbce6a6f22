"""Runtime configuration (store, policies, access), read once from the environment into a frozen value.

The HTTP settings (address, workers, body cap, log level) are the server's: `powercontext_server.settings`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from .errors import PowerContextError

DEFAULT_DATA_DIR = Path(".powercontext")


class ConfigurationError(PowerContextError):
    """A setting is malformed; the server refuses to start rather than guess."""


@dataclass(frozen=True, slots=True)
class Settings:
    database_url: str
    assembly_max_entries: int = 8
    access_mode: Literal["enforced", "disabled"] | None = None  # None: enforced iff credentials exist
    auth_file: Path | None = None
    auth_token: str | None = field(default=None, repr=False)  # never printed
    # MiB of the search mirror's arrays per process before it evicts; None: the mirror's own default.
    search_cache_mb: int | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        data_dir = Path(env.get("POWERCONTEXT_SERVER_DATA_DIR", str(DEFAULT_DATA_DIR)))
        default_url = f"sqlite:///{data_dir / 'powercontext.sqlite3'}"
        return cls(
            database_url=env.get("POWERCONTEXT_SERVER_DATABASE_URL") or default_url,
            assembly_max_entries=positive_int(
                env, "POWERCONTEXT_SERVER_RUNTIME_CONTEXT_ASSEMBLY_MAX_ENTRIES", 8
            ),
            access_mode=_access_mode(env.get("POWERCONTEXT_SERVER_ACCESS_MODE")),
            auth_file=Path(env["POWERCONTEXT_SERVER_AUTH_FILE"])
            if env.get("POWERCONTEXT_SERVER_AUTH_FILE")
            else None,
            auth_token=env.get("POWERCONTEXT_SERVER_AUTH_TOKEN") or None,
            search_cache_mb=positive_int(env, "POWERCONTEXT_SERVER_SEARCH_CACHE_MB", 0) or None,
        )


def positive_int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    # ASCII digits only: str.isdigit also accepts "²" (which int() then refuses) and "٣" (which it reads as 3).
    if not (raw.isascii() and raw.isdigit()) or int(raw) < 1:
        raise ConfigurationError(f"{name} must be a positive integer.")
    return int(raw)


def _access_mode(raw: str | None) -> Literal["enforced", "disabled"] | None:
    if raw is None or raw == "":
        return None
    if raw == "enforced":
        return "enforced"
    if raw == "disabled":
        return "disabled"
    raise ConfigurationError("POWERCONTEXT_SERVER_ACCESS_MODE must be enforced or disabled.")
