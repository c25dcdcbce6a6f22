"""Server and Runtime configuration, read once from the environment into a frozen value."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from .errors import PowerContextError

DEFAULT_DATA_DIR = Path(".powercontext")


class ConfigurationError(PowerContextError):
    """A setting is malformed; the server refuses to start rather than guess."""


@dataclass(frozen=True, slots=True)
class Settings:
    database_url: str
    host: str = "127.0.0.1"
    port: int = 8000
    max_body_bytes: int = 1_048_576
    assembly_max_entries: int = 8
    log_level: str = "info"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        data_dir = Path(env.get("POWERCONTEXT_SERVER_DATA_DIR", str(DEFAULT_DATA_DIR)))
        default_url = f"sqlite:///{data_dir / 'powercontext.sqlite3'}"
        return cls(
            database_url=env.get("POWERCONTEXT_SERVER_DATABASE_URL") or default_url,
            host=env.get("POWERCONTEXT_SERVER_HOST", "127.0.0.1"),
            port=_positive_int(env, "POWERCONTEXT_SERVER_PORT", 8000),
            max_body_bytes=_positive_int(env, "POWERCONTEXT_SERVER_MAX_BODY_BYTES", 1_048_576),
            assembly_max_entries=_positive_int(
                env, "POWERCONTEXT_SERVER_RUNTIME_CONTEXT_ASSEMBLY_MAX_ENTRIES", 8
            ),
            log_level=env.get("POWERCONTEXT_SERVER_LOG_LEVEL", "info").lower(),
        )


def _positive_int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    if not raw.isdigit() or int(raw) < 1:
        raise ConfigurationError(f"{name} must be a positive integer.")
    return int(raw)
