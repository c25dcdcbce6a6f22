"""What a hook command was set up with: its flags, written once by `powercontext setup`.

The token itself is never among them: only the name of the environment variable that holds it,
read when the hook runs.
"""

from __future__ import annotations

import argparse
import json
import math
import urllib.parse
from collections.abc import Sequence
from typing import NamedTuple

from ._contract import DEFAULT_MAX_BYTES, HOST_DEFAULT_ASSEMBLY, MAX_MAX_BYTES, MIN_MAX_BYTES

DEFAULT_URL = "http://127.0.0.1:8000"
DEFAULT_TOKEN_ENV = "POWERCONTEXT_TOKEN"
# Memory only, eight entries, as the contract's host default says: the selection that carried the
# most LoCoMo evidence at 8000 bytes in `make eval`; docs/evaluation.md.
DEFAULT_ASSEMBLY = HOST_DEFAULT_ASSEMBLY
LEGACY = "legacy"  # the word that asks for no `assembly` (the legacy request)
DEFAULT_TIMEOUT = 2.0  # seconds a prompt may wait for its context, the whole exchange included
MAX_TIMEOUT = 10.0
DEFAULT_CAPTURE_TIMEOUT = 3.0  # seconds the background sender tries before dropping the turn


class SettingsError(ValueError):
    """A flag is invalid; the message names it, never a secret."""


class HookSettings(NamedTuple):
    url: str = DEFAULT_URL
    token_env: str = DEFAULT_TOKEN_ENV
    max_bytes: int = DEFAULT_MAX_BYTES
    assembly_json: str | None = DEFAULT_ASSEMBLY  # None: the legacy request
    timeout: float = DEFAULT_TIMEOUT
    capture: bool = True

    def flags(self) -> list[str]:
        """The command-line flags that give these settings back (defaults left out)."""
        out: list[str] = []
        if self.url != DEFAULT_URL:
            out += ["--url", self.url]
        if self.token_env != DEFAULT_TOKEN_ENV:
            out += ["--token-env", self.token_env]
        if self.max_bytes != DEFAULT_MAX_BYTES:
            out += ["--max-bytes", str(self.max_bytes)]
        if self.assembly_json != DEFAULT_ASSEMBLY:
            out += ["--assembly", LEGACY if self.assembly_json is None else self.assembly_json]
        if self.timeout != DEFAULT_TIMEOUT:
            out += ["--timeout", f"{self.timeout:g}"]
        if not self.capture:
            out.append("--no-capture")
        return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The settings' flags, shared by the hook, `setup` and `doctor`."""
    parser.add_argument("--url", default=DEFAULT_URL, help=f"the PowerContext server (default {DEFAULT_URL})")
    parser.add_argument(
        "--token-env",
        default=DEFAULT_TOKEN_ENV,
        metavar="NAME",
        help=f"environment variable holding the bearer token at hook time (default {DEFAULT_TOKEN_ENV})",
    )
    parser.add_argument(
        "--max-bytes",
        default=str(DEFAULT_MAX_BYTES),
        help=f"byte budget of the prepared text, {MIN_MAX_BYTES} to {MAX_MAX_BYTES} (default {DEFAULT_MAX_BYTES})",
    )
    parser.add_argument(
        "--assembly",
        default=DEFAULT_ASSEMBLY,
        metavar="JSON",
        help=f"the prepare request's assembly object, or `legacy` for none (default {DEFAULT_ASSEMBLY})",
    )
    parser.add_argument(
        "--timeout",
        default=str(DEFAULT_TIMEOUT),
        metavar="SECONDS",
        help=f"how long a prompt waits for its context at most (default {DEFAULT_TIMEOUT:g}, at most {MAX_TIMEOUT:g})",
    )
    parser.add_argument("--no-capture", action="store_true", help="do not store completed turns as Memory")


def from_arguments(args: argparse.Namespace) -> HookSettings:
    return HookSettings(
        url=_url(args.url),
        token_env=_env_name(args.token_env),
        max_bytes=_max_bytes(args.max_bytes),
        assembly_json=parse_assembly(args.assembly),
        timeout=_timeout(args.timeout),
        capture=not args.no_capture,
    )


def parse(argv: Sequence[str]) -> HookSettings:
    parser = argparse.ArgumentParser(add_help=False)
    add_arguments(parser)
    args, _unknown = parser.parse_known_args(list(argv))
    return from_arguments(args)


def _url(value: str) -> str:
    parts = urllib.parse.urlsplit(value.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise SettingsError("--url must be an http(s) URL such as http://127.0.0.1:8000")
    if parts.username or parts.password:
        raise SettingsError("--url must not hold credentials: give the token through --token-env")
    return value.strip().rstrip("/")


def _env_name(value: str) -> str:
    if not value or not (value.replace("_", "a").isalnum() and value.isascii()) or value[0].isdigit():
        raise SettingsError("--token-env must be an environment variable name such as POWERCONTEXT_TOKEN")
    return value


def _max_bytes(value: str) -> int:
    text = value.strip()
    if not (text.isascii() and text.isdigit()) or not MIN_MAX_BYTES <= int(text) <= MAX_MAX_BYTES:
        raise SettingsError(f"--max-bytes must be a whole number from {MIN_MAX_BYTES} to {MAX_MAX_BYTES}")
    return int(text)


def parse_assembly(value: str, name: str = "--assembly") -> str | None:
    """The compact JSON text of an assembly object, or None for `legacy`; errors name `name`."""
    if value.strip() == LEGACY:
        return None
    try:
        parsed = json.loads(value)
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        raise SettingsError(f"{name} must be a JSON object or `{LEGACY}`")
    return json.dumps(parsed, separators=(",", ":"), ensure_ascii=False)


def _timeout(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        seconds = 0.0
    if not math.isfinite(seconds) or not 0 < seconds <= MAX_TIMEOUT:
        raise SettingsError(f"--timeout must be a number of seconds above 0, at most {MAX_TIMEOUT:g}")
    return seconds
